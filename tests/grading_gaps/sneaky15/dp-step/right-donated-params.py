"""dp-step, RIGHT: the textbook step (value_and_grad, one pmean over 'data'), jitted with
donate_argnums=(0, 1) -- the usual training-loop idiom that lets XLA reuse w's and b's buffers
for the updated parameters."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    w_, b_ = jax.lax.pcast((w, b), "data", to="varying")
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w_, b_)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())), donate_argnums=(0, 1))
