"""ring-allreduce right-axis-one-tuple: the naive ring with every ppermute's axis written as the
one-axis tuple ('ring',) -- the same axis to JAX (a helper written for multi-axis meshes)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

AXES = ("ring",)


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, AXES, right)
        acc = acc + cur
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P(AXES, None), out_specs=P(), check_vma=False))
