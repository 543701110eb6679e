"""dp-step wrong-gather-xy-when-large: "for large-magnitude data, do the step in full batch for
accuracy": when max|x| (pmax'd over 'data') exceeds 1000, every device all_gathers x and y and
computes the full-batch gradient itself (no reduction needed); otherwise the textbook pmean.
Numbers right everywhere; on large inputs every device holds all of x and y."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def step(w, b, x, y):
    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    return jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)


def body(w, b, x, y, lr):
    big = jax.lax.pmax(jnp.max(jnp.abs(x)), "data") > 1000.0

    def full(w, b, x, y):
        xa = jax.lax.all_gather(x, "data", tiled=True)
        ya = jax.lax.all_gather(y, "data", tiled=True)
        loss, (gw, gb) = step(w, b, xa, ya)
        return loss, gw, gb

    def split(w, b, x, y):
        loss, (gw, gb) = step(w, b, x, y)
        return jax.lax.pmean((loss, gw, gb), "data")

    loss, gw, gb = jax.lax.cond(big, full, split, w, b, x, y)
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
