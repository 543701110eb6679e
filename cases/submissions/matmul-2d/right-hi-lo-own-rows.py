"""matmul-2d, RIGHT (unusual arithmetic): each device splits its OWN x rows into hi = reduce_precision(x, 8, 10) and lo = x - hi and computes its block as x_hi @ w_j + x_lo @ w_j (a split-precision product). Only its own blocks, no collective; the same out block up to float rounding."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    hi = jax.lax.reduce_precision(x, exponent_bits=8, mantissa_bits=10)
    return hi @ w + (x - hi) @ w


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")), out_specs=P("data", "model")))
