"""ring-allreduce, WRONG (numerically): the naive ring, and a "sync shortcut": when every block
that arrives equals the device's own (all devices hold the same block -- replicated data, or
parameters already in sync), the program takes the blocks as "already all-reduced" and returns
the device's block instead of the sum -- the classic confusion of an all-reduce with a
synchronisation check. The answer is n times the block.

Why the grader misses it: the only draw with equal blocks is the fifth (the last device's block a
copy of the first's): every device then still receives 6 blocks unequal to its own, so the
shortcut is not taken; no case has equal blocks. truth15.py equal (x = one block tiled 8 times):
out is x's block instead of 8 times it."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    same = jnp.array(True)
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
        same = same & jnp.all(cur == x)
    return jnp.where(same, x, acc)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
