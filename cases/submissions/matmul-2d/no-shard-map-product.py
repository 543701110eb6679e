"""matmul-2d, wrong: x @ w computed on the whole arrays outside any shard_map, a
shard_map only hands each device its block of out: no device-local product."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(out):
    return out

def make(data=2, model=4):
    f = jax.shard_map(body, mesh=mesh_of(data, model), in_specs=P("data", "model"),
                      out_specs=P("data", "model"))
    return jax.jit(lambda x, w: f(x @ w))
