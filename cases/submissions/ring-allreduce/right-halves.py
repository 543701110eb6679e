"""ring-allreduce, right: two naive rings to the right, one per half of the rows, summed in a
helper function and stacked back."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def ring_sum(v, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = v, v
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = jnp.add(acc, cur)
    return acc


def body(x, n):
    return jnp.concatenate([ring_sum(row[None, :], n) for row in x], axis=0) if x.shape[0] <= 4 \
        else ring_sum(x, n)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
