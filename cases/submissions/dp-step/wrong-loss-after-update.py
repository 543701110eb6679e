"""dp-step, wrong: reports the loss at the updated weights, not before the update."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def loss_fn(w, b, x, y):
    return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))


def body(w, b, x, y, lr):
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")
    gw, gb = jax.grad(loss_fn, argnums=(0, 1))(wv, bv, x, y)
    gw, gb = jax.lax.pmean((gw, gb), "data")
    w, b = w - lr * gw, b - lr * gb
    loss = jax.lax.pmean(loss_fn(w, b, x, y), "data")
    return w, b, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
