"""matmul-2d, WRONG (numerically): each device first rounds its x block to block floating point
-- one exponent per column of the block (that of the column's largest |x| over the block's
rows), each element a integer multiple of the largest times 2^-22 -- then multiplies it by its w block
(out block = x_blk @ w_blk, no collective needed).

Why it is wrong: rows of x of different magnitudes in one block (one sample 1e6 times the others)
lose the small rows: they are rounded to the large row's grid, and their rows of out are off by
up to 100% (truth15.py mixed, row 0 of x times 1e6: 48 of the 128 elements of out outside the
tolerance, off by up to 0.54; the gallery's right.py 0). The grader's draws keep every element of x within a factor 4 of
the others (+-[0.5, 2) times one scale), so the rounding loses at most 2 bits; its columns draw
scales w's columns, not x's rows."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def bfp_columns(x, bits=22):
    """x rounded to a grid of (its column's max |x|) * 2^-bits."""
    m = jnp.max(jnp.abs(x), axis=0, keepdims=True)
    s = jnp.where(m > 0, m, 1.0) * (2.0 ** -bits)
    return jnp.round(x / s) * s


def body(x, w):
    return bfp_columns(x) @ w


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
