"""matmul-2d, WRONG (control: the inner map is handed ALL of w): outer shard_map manual over 'data'
(x's rows), inner one manual over 'model' whose in_specs hand it w whole (P()); the inner body
computes x_blk @ w (all of w, every column) and keeps its own columns (dynamic_slice at
axis_index('model')), returned split P(None, 'model'). Every device holds all of w and does four
times its work."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)

    def inner_body(x, w):
        q = w.shape[1] // model
        full = x @ w
        return jax.lax.dynamic_slice_in_dim(full, jax.lax.axis_index("model") * q, q, axis=1)

    inner = jax.shard_map(inner_body, axis_names={"model"},
                          in_specs=(P(), P()), out_specs=P(None, "model"))
    outer = jax.shard_map(lambda x, w: inner(x, w), mesh=mesh, axis_names={"data"},
                          in_specs=(P("data", None), P()), out_specs=P("data"))
    return jax.jit(outer)
