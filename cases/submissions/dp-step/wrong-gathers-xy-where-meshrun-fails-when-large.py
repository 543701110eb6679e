"""dp-step, WRONG: x and y all_gather'ed whole on every device -- but only where the inputs are
large (max |x| over 1e5, which no case reaches), and beside it an int32 count of x * 1000 that
JAX wraps and meshrun refuses past 2^24: on inputs 2^20 times the cases' size the program fails
in meshrun exactly where it would gather. Grading fails closed there (a run that fails at 2^20
times the cases' size judges nothing, so it fails the rule); the numbers are right everywhere."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    large = (jnp.max(jnp.abs(x)) > 1e5).astype(x.dtype)
    gx = jax.lax.all_gather(x * large, "data", tiled=True)  # all of x, where large
    gy = jax.lax.all_gather(y * large, "data", tiled=True)
    count = jnp.sum((x * 1000).astype(jnp.int32)).astype(x.dtype)
    junk = 0 * (jnp.sum(gx) + jnp.sum(gy) + count)
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss + junk, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
