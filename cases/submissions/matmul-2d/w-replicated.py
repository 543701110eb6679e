"""matmul-2d, wrong: w handed in whole (P()), each device slices its columns by
axis_index('model') -- the right numbers, but every device holds all of w."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    cols = w.shape[1] // jax.lax.axis_size("model")
    mine = jax.lax.dynamic_slice_in_dim(w, jax.lax.axis_index("model") * cols, cols, axis=1)
    return x @ mine

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P()),
                                 out_specs=P("data", "model")))
