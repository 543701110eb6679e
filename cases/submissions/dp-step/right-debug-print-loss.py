"""dp-step right-debug-print-loss: the textbook step with a jax.debug.print of the averaged loss
inside the body (logging, as training code does); nothing else differs."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    jax.debug.print("loss {l}", l=loss, ordered=False)
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
