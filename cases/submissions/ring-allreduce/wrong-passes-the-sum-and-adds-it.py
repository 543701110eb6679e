"""ring-allreduce, wrong: passes the running sum on and adds it to the running sum (not to
the own block): every block is counted by a binomial weight, 2^(n-1) blocks' worth in all."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    perm = [(i, (i + 1) % n) for i in range(n)]
    acc = x
    for _ in range(n - 1):
        acc = acc + jax.lax.ppermute(acc, "ring", perm)
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
