"""matmul-2d, right: shard_map as a decorator (functools.partial), jit on top."""
from functools import partial

import jax
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    @jax.jit
    @partial(jax.shard_map, mesh=mesh_of(data, model),
             in_specs=(P("data", None), P(None, "model")), out_specs=P("data", "model"))
    def program(x, w):
        return x @ w

    return program
