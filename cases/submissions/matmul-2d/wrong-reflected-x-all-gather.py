"""matmul-2d, WRONG (cheat, new encoding: a local REFLECTION of x's rows, then a plain all_gather): each device multiplies its x rows by a D x D Householder reflection R = I - 2 v v^T / |v|^2 (v = 1.5, 2.5, ..., from iota; R = R^T = R^-1) -- every number a weighted sum of a row's D elements, none an element, a scaled copy or an affine image -- and all_gathers the result over 'data'. Every device then computes the product of ALL of x's rows with its w columns, (x R) @ (R w_j) = x @ w_j, and slices its own rows: it holds (encoded) the whole x and does every data device's share, with a collective where the exercise asks for none. Right numbers."""
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
    G = jax.lax.all_gather(x @ R, "data", axis=0, tiled=True)       # (B, D), reflected
    col = G @ (R @ w)                                                # (B, H/m): all rows
    r = x.shape[0]
    return jax.lax.dynamic_slice_in_dim(col, jax.lax.axis_index("data") * r, r, axis=0)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model"), check_vma=False))
