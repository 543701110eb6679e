"""ring-allreduce, right: one step of the ring in a helper (send the block in transit to the
right neighbour, add what arrives with jnp.add), called n - 1 times."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def ring_step(acc, cur, perm):
    cur = jax.lax.ppermute(cur, axis_name="ring", perm=perm)
    return jnp.add(acc, cur), cur


def body(x, n):
    perm = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        acc, cur = ring_step(acc, cur, perm)
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
