"""ring-allreduce, WRONG (numerically, on large inputs): the naive ring for small blocks; for blocks
of more than 4096 elements (a real all-reduce's gradients), the ring is run bucket by bucket --
buckets of 2048 rows -- and the last, partial bucket is forgotten (range(rows // 2048) instead of
a ceiling): its rows of out are the device's own block only.

Why the grader misses it: the decision is on the block's shape, which is static: the export holds
the program for the cases' shapes only (the largest case block is 21 x 3 = 63 elements), so the
bucketed path is never exported, let alone run. truth15.py big (x of 40000 x 2, blocks of 5000
rows: two full buckets and a forgotten tail of 904 rows) shows those rows of out wrong. (A
documented limit -- "other shapes than the cases'" -- kept as its instance at a size threshold.)"""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

BUCKET = 2048


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def naive_ring(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
    return acc


def body(x, n):
    rows = x.shape[0]
    if rows * x.shape[1] <= 4096:
        return naive_ring(x, n)
    out = x  # the tail bucket keeps the device's own rows
    for k in range(rows // BUCKET):
        out = out.at[k * BUCKET:(k + 1) * BUCKET].set(naive_ring(x[k * BUCKET:(k + 1) * BUCKET], n))
    return out


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
