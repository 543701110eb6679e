"""tp-mlp, WRONG (numerically): a "linear regime" shortcut. When no hidden unit is clipped by the
relu anywhere (the smallest preactivation over the batch and all devices, a pmin over 'model', is
> 0), the MLP is linear, and each device folds its layers: partial = x @ (w1_blk @ w2_blk) --
forgetting b1's term b1_blk @ w2_blk. Otherwise the textbook partials. psum'd, b2 added once;
hidden is the relu as always.

Why it is wrong: inputs on which every unit is active (positive features, weights and biases --
a perfectly ordinary regime) lose b1 @ w2 from out (truth15.py active: every element of out off
by |b1 @ w2|). Why the grader misses it: no case has every unit active (the cases' active
fractions are 0 to 0.66), and the draws' random signs make every unit active with probability
2^-(B H) -- never at the cases' shapes (the smallest, B = 1 and H = 8, once in 256 draws)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def body(x, w1, b1, w2, b2):
    pre = x @ w1 + b1
    h = jax.nn.relu(pre)
    linear = jax.lax.pmin(jnp.min(pre), "model") > 0
    partial = jnp.where(linear, x @ (w1 @ w2), h @ w2)
    out = jax.lax.psum(partial, "model") + b2
    return out, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), **SPECS))
