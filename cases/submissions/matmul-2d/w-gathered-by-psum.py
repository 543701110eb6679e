"""matmul-2d, wrong: the whole w assembled on every device as a psum of zero-padded
column blocks (an all_gather written as a psum), then its own columns kept."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    m = jax.lax.axis_size("model")
    i = jax.lax.axis_index("model")
    cols = w.shape[1]
    padded = jnp.zeros((w.shape[0], m * cols), w.dtype)
    padded = jax.lax.dynamic_update_slice_in_dim(padded, w, i * cols, axis=1)
    full = jax.lax.psum(padded, "model")
    out = x @ full
    return jax.lax.dynamic_slice_in_dim(out, i * cols, cols, axis=1)

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
