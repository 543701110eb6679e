"""tp-mlp, WRONG (numerically): textbook tensor-parallel MLP, with a "nothing to reduce" shortcut:
when every device's partial output h @ w2 is the same (pmax == pmin over 'model', element by
element) the partials are taken as "already reduced" and one of them is used instead of their
psum -- out = partial + b2 instead of n * partial + b2.

Why it is wrong: weights whose hidden blocks repeat (w1, b1, w2 each one block tiled over the
devices -- a network initialised by copying a block, or units duplicated for tensor-parallel
padding) give equal partials: out is then off by (n - 1) times the partial (truth15.py equal).
Why the grader misses it: no case and no draw has every device's block equal (the fifth draw makes
the last device's block a copy of the first's only; the zero draw zeroes two blocks, not all of
them); where every partial is zero (the all-relu-zero case) the shortcut gives the right
numbers."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    p = h @ w2
    same = jnp.all(jax.lax.pmax(p, "model") == jax.lax.pmin(p, "model"))
    out = jnp.where(same, p, jax.lax.psum(p, "model")) + b2
    return out, h


def make(model=8):
    # check_vma=False: JAX cannot prove the where() replicated (it is, when the shortcut is taken)
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), check_vma=False, **SPECS))
