"""matmul-2d, RIGHT: two nested shard_maps -- the outer one manual over 'data' only
(axis_names={'data'}: x split by rows, 'model' left to the compiler), the inner one, in the
outer's body, manual over 'model' (w split by columns). Each device multiplies its x rows by its w
columns; out comes back split P('data', 'model'). No collective is needed, none is done. Compiled
by live JAX, the executable's input shardings give every device only its x rows and only its w
columns (truth15_nested.py prints them): no device holds all of w."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    inner = jax.shard_map(lambda x, w: x @ w, axis_names={"model"},  # the context mesh
                          in_specs=(P(), P(None, "model")), out_specs=P(None, "model"))
    outer = jax.shard_map(lambda x, w: inner(x, w), mesh=mesh, axis_names={"data"},
                          in_specs=(P("data", None), P()), out_specs=P("data"))
    return jax.jit(outer)
