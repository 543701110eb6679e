"""dp-step wrong-loop-extra-iteration-gathers-xy-when-large: a while_loop whose iteration k
all_gathers x and y times (k > 0); 1 trip normally, 2 when the mean magnitude of a device's rows
(pmax of block sums of |x| and |y|; a pmax of max|x| would hold that element) passes 1e3. On every case and
draw (|x| <= 512) it is entered once and gathers zeros, and the textbook pmean step is returned;
on large x every device holds the whole batch and takes the full-batch gradient itself (no
reduction of gradients). The grader judges the iterations the case runs (an unentered body once),
not a loop's extra trips. Truly wrong: structural (truth14.py gatherlarge)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def loss_fn(w, b, x, y):
    return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))


def body(w, b, x, y, lr):
    n = jax.lax.axis_size("data")
    big = jax.lax.pmax(jnp.sum(jnp.abs(x)) + jnp.sum(jnp.abs(y)), "data") > 1e3 * (x.size + y.size)
    trips = jnp.where(big, 2, 1)
    r, D = x.shape
    K = y.shape[1]

    def step(c):
        k, X, Y = c
        g = (k > 0).astype(jnp.float32)
        X = X + jax.lax.all_gather(x * g, "data", axis=0, tiled=True)
        Y = Y + jax.lax.all_gather(y * g, "data", axis=0, tiled=True)
        return k + 1, X, Y

    _, X, Y = jax.lax.while_loop(lambda c: c[0] < trips, step,
                                 (jnp.int32(0), jnp.zeros((r * n, D), jnp.float32),
                                  jnp.zeros((r * n, K), jnp.float32)))
    lf, (gwf, gbf) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b, X, Y)
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv, x, y)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    loss, gw, gb = (jnp.where(big, lf, loss), jnp.where(big, gwf, gw), jnp.where(big, gbf, gb))
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
