"""tp-mlp, wrong: all_gathers x-side w1 blocks (w1, b1) and w2, computes the full MLP on every
device, no psum: right numbers, full weights everywhere."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    w1f = jax.lax.all_gather(w1, "model", axis=1, tiled=True)
    b1f = jax.lax.all_gather(b1, "model", axis=0, tiled=True)
    w2f = jax.lax.all_gather(w2, "model", axis=0, tiled=True)
    hf = jax.nn.relu(x @ w1f + b1f)
    cols = w1.shape[1]
    h = jax.lax.dynamic_slice_in_dim(hf, jax.lax.axis_index("model") * cols, cols, axis=1)
    return hf @ w2f + b2, h


def make(model=8):
    in_specs = (P(), P(None, "model"), P("model"), P("model", None), P())
    out_specs = (P(), P(None, "model"))
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=in_specs,
                                 out_specs=out_specs, check_vma=False))
