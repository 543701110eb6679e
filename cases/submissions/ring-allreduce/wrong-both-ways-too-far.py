"""ring-allreduce, wrong: both directions, n/2 steps each way: the block of the device opposite
arrives from both sides and is added twice."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    left = [(i, (i - 1) % n) for i in range(n)]
    acc, a, b = x, x, x
    for _ in range(n // 2):
        a = jax.lax.ppermute(a, "ring", right)
        b = jax.lax.ppermute(b, "ring", left)
        acc = acc + a + b
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
