"""ring-allreduce, right: the ring's size read inside the body from jax.lax.axis_size, the
permutation a tuple of tuples, the sum by +=."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    del n
    size = jax.lax.axis_size("ring")
    perm = tuple((i, (i + 1) % size) for i in range(size))
    acc, cur = x, x
    for _ in range(size - 1):
        cur = jax.lax.ppermute(cur, "ring", perm)
        acc += cur
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
