"""ring-allreduce, right: the naive ring with a float64 accumulator (x64 enabled): each device widens its
block, passes and adds in double precision, and rounds the final sum back to float32 once -- the most
accurate sum a ring can give. Same ppermutes between neighbours."""
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc = cur = x.astype(jnp.float64)
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
    return acc.astype(jnp.float32)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
