"""ring-allreduce, WRONG (cheat): the ring of n - 1 neighbour ppermutes runs, but instead of adding each block as it passes, every device writes x + 0.37 of every block it sees into one (n, B, D) buffer (dynamic_update_slice at the block's ring index) and at the end sums the buffer and subtracts n * 0.37: one value on every device holds all of x (shifted by a constant), the thing 'each adds the blocks as they pass' forbids."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

C = 0.37


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(n, x):
    right = [(i, (i + 1) % n) for i in range(n)]
    i = jax.lax.axis_index("ring")
    buf = jnp.zeros((n,) + x.shape, jnp.float32)
    cur = x + C
    buf = jax.lax.dynamic_update_slice(buf, cur[None], (i, 0, 0))
    for k in range(1, n):
        cur = jax.lax.ppermute(cur, "ring", right)
        buf = jax.lax.dynamic_update_slice(buf, cur[None], ((i - k) % n, 0, 0))
    return jnp.sum(buf, axis=0) - n * C


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(ring, x), mesh=mesh_of(ring), in_specs=P("ring", None),
                                 out_specs=P(), check_vma=False))
