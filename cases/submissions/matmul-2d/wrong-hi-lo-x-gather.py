"""matmul-2d, WRONG (cheat): x split into hi = reduce_precision(x, 8, 10) and lo = x - hi, both all_gathered over 'data' and never added back: every device computes the whole column block x @ w_j as x_hi @ w_j + x_lo @ w_j and keeps its own rows. Every device holds all of x (as two float pieces) and does every row's product; the exercise asks for no collective."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    r = x.shape[0]; i = jax.lax.axis_index("data")
    hi = jax.lax.reduce_precision(x, exponent_bits=8, mantissa_bits=10)
    XH = jax.lax.all_gather(hi, "data", axis=0, tiled=True)
    XL = jax.lax.all_gather(x - hi, "data", axis=0, tiled=True)
    full = XH @ w + XL @ w
    return jax.lax.dynamic_slice_in_dim(full, i * r, r, axis=0)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model"), check_vma=False))
