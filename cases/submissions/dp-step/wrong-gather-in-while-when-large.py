"""dp-step wrong-gather-in-while-when-large: the textbook pmean step, then a "refinement" while
loop that runs only while max|x| (pmax'd over 'data') exceeds 1000 and a flag is unset: it
all_gathers x and y and recomputes the gradient on the full batch, once. On the cases the loop
never runs, so no case shows the gather; on large inputs every device holds all of x and y.
Grading runs the body of a while the case never enters once (docs/grading.md, every branch)."""
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
    loss, (gw, gb) = step(w, b, x, y)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    big = jax.lax.pmax(jnp.max(jnp.abs(x)), "data") > 1000.0

    def again(c):
        return c[0] & big

    def full(c):
        xa = jax.lax.all_gather(x, "data", tiled=True)
        ya = jax.lax.all_gather(y, "data", tiled=True)
        l2, (g2w, g2b) = step(w, b, xa, ya)
        return jnp.array(False), l2, g2w, g2b

    _, loss, gw, gb = jax.lax.while_loop(again, full, (jnp.array(True), loss, gw, gb))
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
