"""matmul-2d, wrong: the mesh axes swapped: x split by rows over 'model', w by columns
over 'data' -- the right numbers, but neither input is split as asked."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    return x @ w

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("model", None), P(None, "data")),
                                 out_specs=P("model", "data")))
