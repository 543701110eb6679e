"""tp-mlp, wrong: assembles the full w1 and b1 on every device with a psum of zero-padded blocks
(an all_gather written as a psum), computes the full hidden layer and keeps its block: right
numbers, but every device holds the full w1."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def gather_cols(blk, axis):
    n = jax.lax.axis_size("model")
    i = jax.lax.axis_index("model")
    shape = list(blk.shape)
    shape[axis] = blk.shape[axis] * n
    full = jnp.zeros(shape, blk.dtype)
    start = [0] * blk.ndim
    start[axis] = i * blk.shape[axis]
    return jax.lax.psum(jax.lax.dynamic_update_slice(full, blk, start), "model")


def body(x, w1, b1, w2, b2):
    w1f, b1f = gather_cols(w1, 1), gather_cols(b1, 0)
    hf = jax.nn.relu(x @ w1f + b1f)
    cols = w1.shape[1]
    h = jax.lax.dynamic_slice_in_dim(hf, jax.lax.axis_index("model") * cols, cols, axis=1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    in_specs = (P(), P(None, "model"), P("model"), P("model", None), P())
    out_specs = (P(), P(None, "model"))
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=in_specs,
                                 out_specs=out_specs))
