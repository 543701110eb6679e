"""matmul-2d, RIGHT (nested, the other way round): the outer shard_map is manual over 'model' only
(w's columns, P(None, 'model'); x handed P(), the compiler's to split over 'data'), the inner one,
in its body, manual over 'data' (x's rows, P('data')): x_blk @ w_blk, returned P('data') by the
inner map and P(None, 'model') by the outer -- out split P('data', 'model'). No collective;
compiled, every device holds x (4, 5) and w (5, 4)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    inner = jax.shard_map(lambda x, w: x @ w, axis_names={"data"},
                          in_specs=(P("data"), P()), out_specs=P("data"))
    outer = jax.shard_map(lambda x, w: inner(x, w), mesh=mesh, axis_names={"model"},
                          in_specs=(P(), P(None, "model")), out_specs=P(None, "model"))
    return jax.jit(outer)
