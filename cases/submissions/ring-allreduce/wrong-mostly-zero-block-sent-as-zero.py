"""ring-allreduce, WRONG (numerically): a "sparse" shortcut. A device whose block is mostly zeros
(more than half of its elements exactly 0 -- padding, a sparse gradient) sends zeros for the whole
block: its few nonzero elements are dropped from the sum. A block that is all zeros, or has at
most half zeros, is summed right (the naive ring).

Why the grader misses it: its zero draw zeroes whole blocks (the second and the last device's)
and the first row of x, where dropping the block changes nothing (all-zero) or the block stays at
most half zero (one zero row of a block of two or more rows; a block of one row is all zero);
no case has a block with more than half zeros (example4, the integer case, has 2%). truth15.py
sparse: blocks with 5/8 of their elements zero, out wrong in most elements."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    zeros = jnp.sum(x == 0)
    x = jnp.where(2 * zeros > x.size, jnp.zeros_like(x), x)
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
