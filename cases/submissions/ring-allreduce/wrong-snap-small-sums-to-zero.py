"""ring-allreduce wrong-snap-small-sums-to-zero: the naive ring, then a "cleanup of rounding
noise": every element of the sum smaller in magnitude than 1e-5 times the largest one is set to 0
(each device the same, so replicas agree). Wrong whenever x's columns have different scales: a
column 1e5 times smaller than another is summed to all zeros."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
    return jnp.where(jnp.abs(acc) < 1e-5 * jnp.max(jnp.abs(acc)), 0.0, acc)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
