"""ring-allreduce, right: the block raveled into a vector, the ring run on the vector, the sum
reshaped back to the block's shape."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    perm = [(i, (i + 1) % n) for i in range(n)]
    flat = jnp.ravel(x)
    acc, cur = flat, flat
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", perm)
        acc = acc + cur
    return acc.reshape(x.shape)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
