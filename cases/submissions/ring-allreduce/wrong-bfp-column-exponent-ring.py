"""ring-allreduce, WRONG (numerically): a "compressed" naive ring. Before sending, each device
rounds its block to block floating point: one shared exponent per column (that of the column's
largest |element| in the block), every element kept as a 24-bit integer multiple of
2^(e - 24). The largest element of a column keeps all its bits, an element 4 times smaller
loses 2, one 2^k times smaller loses k. The ring then adds the rounded blocks as the naive ring.

Why it is wrong: a column whose block mixes magnitudes (an outlier of 1e8 beside values of 1)
loses the small values entirely: they are rounded to multiples of 8 (truth15.py mixed, an outlier
row of 1e7 in device 0's block, grid 1: 21 of the 24 elements of out outside the tolerance, off by
up to 0.97; the gallery's right.py 0 of 24). Every draw the grader makes has all the
elements of a column within a factor 4 (+-[0.5, 2) times one scale; the columns draw scales whole
columns by 2^-40, which the per-column exponent follows exactly), so the rounding is at most 2 bits
below float32's and hides inside every tolerance."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def bfp_columns(x, bits=24):
    """x rounded to a grid of 2^(e - bits) per column, 2^e > the column's max |x|."""
    m = jnp.max(jnp.abs(x), axis=0, keepdims=True)
    e = jnp.floor(jnp.log2(jnp.where(m > 0, m, 1.0))) + 1.0
    e = jnp.clip(e, -100, 100).astype(jnp.int32)
    q = jnp.round(jnp.ldexp(x, bits - e))
    return jnp.ldexp(q, e - bits)


def body(x, n):
    x = bfp_columns(x)
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
