"""tp-mlp, WRONG (numerically): the partial outputs are "compressed" before the psum as block
floating point -- one scale per output column (the column's largest |partial| over the batch), each
element kept as an integer multiple of that scale times 2^-22 -- then psum'd,
b2 added once.

Why it is wrong: a batch whose rows differ in magnitude (one sample 1e5 times larger than the
others, an outlier) loses the small rows' outputs: they are rounded to the large row's grid
(truth15.py mixed, row 0 of x times 1e5: 6 of the 8 elements of out outside the tolerance, off
by up to 0.13; the gallery's right.py 0 of 8). Every draw of the
grader has all elements of an input within a factor 4 of each other, so the partials of a column
are within a few bits of each other and the rounding stays near float32's; the columns draw
(every other column of w2 and b2 times 2^-40) scales whole columns, which a per-column exponent
follows exactly."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def bfp_columns(x, bits=22):
    """x rounded to a grid of (its column's max |x|) * 2^-bits."""
    m = jnp.max(jnp.abs(x), axis=0, keepdims=True)
    s = jnp.where(m > 0, m, 1.0) * (2.0 ** -bits)
    return jnp.round(x / s) * s


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(bfp_columns(h @ w2), "model") + b2
    return out, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), **SPECS))
