"""ring-allreduce, wrong: the textbook decomposition with JAX's own collectives -- the block
flattened and padded to n chunks, jax.lax.psum_scatter then jax.lax.all_gather: the right numbers,
but the exercise is to build them from ppermute steps."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    size = x.size
    c = -(-size // n)
    flat = jnp.pad(x.reshape(-1), (0, c * n - size))
    part = jax.lax.psum_scatter(flat, "ring", tiled=True)
    full = jax.lax.all_gather(part, "ring", tiled=True)
    return jax.lax.slice(full, (0,), (size,)).reshape(x.shape)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
