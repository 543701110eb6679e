"""ring-allreduce, wrong: only device 0 keeps the sum (jnp.where on axis_index), the others
return their own block: JAX returns device 0's, so the numbers come out right, but out is not
replicated."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    perm = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", perm)
        acc = acc + cur
    return jnp.where(jax.lax.axis_index("ring") == 0, acc, x)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
