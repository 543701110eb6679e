"""ring-allreduce, wrong: the blocks sent as int32 (a user shrinking what crosses the links):
every value truncated toward zero. Right where x holds integers (example4) only."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    perm = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x.astype(jnp.int32)
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", perm)
        acc = acc + cur.astype(jnp.float32)
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
