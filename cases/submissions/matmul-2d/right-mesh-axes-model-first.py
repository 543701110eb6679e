"""matmul-2d, right: the mesh declared with its axes in the other order, ('model', 'data') of shape
(model, data); the specs name the axes, so x is still split by rows over 'data', w by columns over
'model', and out is P('data', 'model'): each device multiplies its own blocks."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((model, data), ("model", "data"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    return jax.jit(jax.shard_map(lambda x, w: x @ w, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
