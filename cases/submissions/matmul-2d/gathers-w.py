"""matmul-2d, wrong: w all_gather'ed over model -- every device holds the whole w, multiplies
by it, and keeps its own columns: the numbers are right, the memory is 4 times what is asked."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    full = jax.lax.all_gather(w, "model", axis=1, tiled=True)
    cols = w.shape[1]
    out = x @ full
    return jax.lax.dynamic_slice_in_dim(out, jax.lax.axis_index("model") * cols, cols, axis=1)

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
