"""ring-allreduce, right: a careful user's dtype round trips -- the block taken with
jnp.asarray(..., jnp.float32), each received block cast with astype(jnp.float32), the sum returned
through jnp.asarray."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    perm = [(i, (i + 1) % n) for i in range(n)]
    acc = jnp.asarray(x, dtype=jnp.float32)
    cur = acc
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", perm).astype(jnp.float32)
        acc = acc + cur
    return jnp.asarray(acc)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
