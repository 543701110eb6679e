"""ring-allreduce, WRONG (right only at the cases' magnitudes): a lax.cond on the device's block's largest
magnitude -- below 100, every shipped case, the ring's sum; above, the block itself (no
all-reduce at all). Every case passes; inputs a few hundred times larger do not."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def ring(x, n):
    perm = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", perm)
        acc = acc + cur
    return acc


def body(x, n):
    small = jnp.max(jnp.abs(x)) < 100.0
    return jax.lax.cond(small, lambda v: ring(v, n), lambda v: v, x)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
