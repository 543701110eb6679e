"""ring-allreduce, right: each block travels both ways round the ring -- n/2 steps to the right,
then n/2 - 1 to the left, reach the n - 1 other devices."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    left = [(i, (i - 1) % n) for i in range(n)]
    acc, from_left, from_right = x, x, x
    for _ in range(n // 2):
        from_left = jax.lax.ppermute(from_left, "ring", right)
        acc = acc + from_left
    for _ in range(n - 1 - n // 2):
        from_right = jax.lax.ppermute(from_right, "ring", left)
        acc = acc + from_right
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
