"""ring-allreduce, wrong: a `jax.lax.fori_loop` ring that writes every block it receives into an
(n, rows, D) buffer carried by the loop (slot i by dynamic_update_index_in_dim), summed at the
end: right numbers, but the buffer holds all of x on every device."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]

    def step(i, carry):
        buf, cur = carry
        cur = jax.lax.ppermute(cur, "ring", right)
        return jax.lax.dynamic_update_index_in_dim(buf, cur, i, 0), cur

    buf = jax.lax.dynamic_update_index_in_dim(jnp.zeros((n,) + x.shape, x.dtype), x, 0, 0)
    buf, _ = jax.lax.fori_loop(1, n, step, (buf, x))
    return jnp.sum(buf, axis=0)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
