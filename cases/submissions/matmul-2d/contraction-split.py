"""matmul-2d, wrong sharding: x split by columns over model and w by rows, the partial
products psum'ed -- the right numbers, but neither input is split as asked and out is not split
by columns."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    return jax.lax.psum(x @ w, "model")

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", "model"), P("model", None)),
                                 out_specs=P("data", None)))
