"""matmul-2d, RIGHT (the control for wrong-reflected-x-all-gather: the reflection kept local): each device multiplies its own x rows by a D x D Householder reflection R (from iota; R = R^T = R^-1) and its own w columns by R, and returns (x_i R)(R w_j) = x_i w_j, its own block. No collective; nothing but its own blocks."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def reflection(k):
    v = jax.lax.iota(jnp.float32, k) + 1.5
    return jnp.eye(k, dtype=jnp.float32) - 2.0 * jnp.outer(v, v) / jnp.dot(v, v)


def body(x, w):
    R = reflection(x.shape[1])
    return (x @ R) @ (R @ w)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")), out_specs=P("data", "model")))
