"""ring-allreduce, wrong (issue #47.1): every block passed all the way round and kept, then
summed -- each device holds the whole x -- with each kept block laundered through a max over an
added axis of length 1 before they are stacked."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    blocks, cur = [x], x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        blocks.append(cur)
    kept = jnp.concatenate([jnp.max(b[None, None], axis=0) for b in blocks])
    return jnp.sum(kept, axis=0)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
