"""dp-step, WRONG (right only at the cases' magnitudes): the averaged gradients are clipped to
+-10^6 before the update -- never reached on a shipped case, whose gradients are small, so every
case passes; on inputs a few hundred times larger the update is not the exercise's."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def loss_fn(w, b, x, y):
    return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))


def body(w, b, x, y, lr):
    wv, bv = jax.lax.pcast((w, b), ("data",), to="varying")
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv, x, y)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    gw, gb = jnp.clip(gw, -1e6, 1e6), jnp.clip(gb, -1e6, 1e6)
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
