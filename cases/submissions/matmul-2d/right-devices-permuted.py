"""matmul-2d, right (control): the textbook local product on a (data, model) mesh built from a fixed
permutation of the devices (mesh position -> device); shard_map depends on mesh positions only."""
import jax
import numpy as np
from jax.sharding import AxisType, PartitionSpec as P

PERM = [5, 2, 7, 0, 3, 6, 1, 4]


def mesh_of(data, model):
    devs = [jax.devices()[i] for i in PERM if i < data * model]
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=devs)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(lambda x, w: x @ w, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
