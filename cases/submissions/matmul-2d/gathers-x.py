"""matmul-2d, wrong: x all_gather'ed over 'data': every device multiplies the whole x by its
columns and keeps its own rows -- the right numbers, but every device holds all of x."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    full = jax.lax.all_gather(x, "data", axis=0, tiled=True)
    rows = x.shape[0]
    out = full @ w
    return jax.lax.dynamic_slice_in_dim(out, jax.lax.axis_index("data") * rows, rows, axis=0)

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
