"""ring-allreduce, right (control for wrong-skip-arrival-equal-to-own): the same n-step ring, the
own block that comes back at the last step skipped by the step's index, not by comparing values."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for step in range(1, n + 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        if step < n:
            acc = acc + cur
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
