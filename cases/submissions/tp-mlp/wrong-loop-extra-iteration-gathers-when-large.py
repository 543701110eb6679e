"""tp-mlp wrong-loop-extra-iteration-gathers-when-large: a while_loop accumulates "gathered"
weights; iteration k all_gathers w1, b1, w2 times (k > 0). Its trip count is 1 normally and 2
when the weights' mean magnitude (pmax of block sums of |w1|, |b1|, |w2|) passes 1e3: so on every case and every draw (at most 512) the loop is entered
once and gathers zeros, and the psum'd out is returned; on large weights the second iteration
gathers all of w1, b1, w2 on every device and out is computed unsplit there. The grader judges
a loop body on the iterations the case runs (and an unentered body once), and every branch of a
cond; extra iterations of an entered loop it never sees (sneaky13's cond-on-large class, moved
into a loop's trip count). Truly wrong: structural, on weights > 1e3 every device holds all of
w1 and w2 (truth14.py gatherlarge shows the all_gather's operand holds w1 there)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def body(x, w1, b1, w2, b2):
    n = jax.lax.axis_size("model")
    size = jax.lax.pmax(jnp.sum(jnp.abs(w1)) + jnp.sum(jnp.abs(b1)) + jnp.sum(jnp.abs(w2)), "model")
    big = size > 1e3 * (w1.size + b1.size + w2.size)   # (a pmax of max|w1| holds that element)
    trips = jnp.where(big, 2, 1)
    D, hb = w1.shape
    O = w2.shape[1]

    def cond(c):
        return c[0] < trips

    def step(c):
        k, W1, B1, W2 = c
        g = (k > 0).astype(jnp.float32)
        W1 = W1 + jax.lax.all_gather(w1 * g, "model", axis=1, tiled=True)
        B1 = B1 + jax.lax.all_gather(b1 * g, "model", axis=0, tiled=True)
        W2 = W2 + jax.lax.all_gather(w2 * g, "model", axis=0, tiled=True)
        return k + 1, W1, B1, W2

    init = (jnp.int32(0), jnp.zeros((D, hb * n), jnp.float32), jnp.zeros((hb * n,), jnp.float32),
            jnp.zeros((hb * n, O), jnp.float32))
    _, W1, B1, W2 = jax.lax.while_loop(cond, step, init)
    out_full = jax.nn.relu(x @ W1 + B1) @ W2 + b2
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.where(big, out_full, out), h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), check_vma=False, **SPECS))
