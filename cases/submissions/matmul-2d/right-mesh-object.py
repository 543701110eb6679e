"""matmul-2d, right: the mesh built as jax.sharding.Mesh over a numpy grid of devices."""
import jax
import numpy as np
from jax.sharding import Mesh
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    return x @ w

def make(data=2, model=4):
    grid = np.array(jax.devices()[:data * model]).reshape(data, model)
    mesh = Mesh(grid, ("data", "model"))
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
