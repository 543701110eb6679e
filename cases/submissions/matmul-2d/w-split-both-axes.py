"""matmul-2d, wrong: w split by columns over both axes (P(None, ('data', 'model'))):
each device holds an eighth of w's columns and repeats them to fill its block."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    return x @ jnp.concatenate([w, w], axis=1)

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, ("data", "model"))),
                                 out_specs=P("data", "model")))
