"""ring-allreduce, right: the naive ring written with jax.lax primitives only (lax.add, the
steps counted by a Python while loop)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    perm = [(i, (i + 1) % n) for i in range(n)]
    acc, cur, step = x, x, 0
    while step < n - 1:
        cur = jax.lax.ppermute(cur, "ring", perm)
        acc = jax.lax.add(acc, cur)
        step += 1
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
