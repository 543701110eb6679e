"""ring-allreduce, wrong: a ring that passes one row at a time: a flat `jax.lax.fori_loop` of
(n - 1) * rows iterations, each ppermuting one row of the travelling block to the right neighbour
and writing the row it receives into the travelling block and into an (n * rows, D) buffer,
summed at the end: the buffer holds all of x (it fills by one row an iteration: 112 on
example4)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    rows = x.shape[0]

    def step(i, carry):
        buf, cur = carry
        r = i % rows
        row = jax.lax.dynamic_index_in_dim(cur, r, keepdims=True)
        got = jax.lax.ppermute(row, "ring", right)
        cur = jax.lax.dynamic_update_index_in_dim(cur, got[0], r, 0)
        return jax.lax.dynamic_update_index_in_dim(buf, got[0], rows + i, 0), cur

    buf = jax.lax.dynamic_update_slice_in_dim(jnp.zeros((n * rows, x.shape[1]), x.dtype), x, 0, 0)
    buf, _ = jax.lax.fori_loop(0, (n - 1) * rows, step, (buf, x))
    return jnp.sum(buf.reshape(n, rows, x.shape[1]), axis=0)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
