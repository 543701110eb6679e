"""matmul-2d, RIGHT (nested; the inner map returns its block transposed): outer shard_map manual
over 'data' (x's rows; w handed P()), inner one manual over 'model' computing w_blk^T x_blk^T =
(x_blk @ w_blk)^T (H/4, B/2), returned split P('model', None); the outer body transposes it back
(a per-device layout change: the result is split over 'model' along out's dimension 1, as the
exercise asks). No collective; compiled, every device holds x (4, 5), w (5, 4) and returns a
(4, 4) block of out, P('data', 'model')."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    inner = jax.shard_map(lambda x, w: w.T @ x.T, axis_names={"model"},
                          in_specs=(P(), P(None, "model")), out_specs=P("model", None))
    outer = jax.shard_map(lambda x, w: inner(x, w).T, mesh=mesh, axis_names={"data"},
                          in_specs=(P("data", None), P()), out_specs=P("data"))
    return jax.jit(outer)
