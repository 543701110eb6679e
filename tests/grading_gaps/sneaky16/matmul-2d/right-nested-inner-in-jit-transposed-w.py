"""matmul-2d, RIGHT (nested; the inner map called through a jax.jit, w transposed in the outer
body): outer shard_map manual over 'data' (x's rows); in its body w.T (a layout change on the
automatic axis) goes to a jitted helper whose inner shard_map, manual over 'model', receives its
rows of w.T (P('model', None): w's columns), computes x_blk @ wt_blk.T with lax.dot_general and
returns it split P(None, 'model'). No collective."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    inner = jax.shard_map(
        lambda x, wt: jax.lax.dot_general(x, wt, (((1,), (1,)), ((), ()))), axis_names={"model"},
        in_specs=(P(), P("model", None)), out_specs=P(None, "model"))
    helper = jax.jit(inner)
    outer = jax.shard_map(lambda x, w: helper(x, w.T), mesh=mesh, axis_names={"data"},
                          in_specs=(P("data", None), P()), out_specs=P("data"))
    return jax.jit(outer)
