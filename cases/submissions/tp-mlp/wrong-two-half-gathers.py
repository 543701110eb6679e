"""tp-mlp, WRONG (cheat: the gather split in two): the top rows and the bottom rows of w1 are
all_gather'ed separately -- each value holds only part of w1, but every device holds all of it
and computes the full hidden layer, then keeps its own columns."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


IN_SPECS = (P(), P(None, "model"), P("model"), P("model", None), P())
OUT_SPECS = (P(), P(None, "model"))


def body(x, w1, b1, w2, b2):
    c = w1.shape[1]
    i = jax.lax.axis_index("model")
    d = w1.shape[0] // 2
    top = jax.lax.all_gather(w1[:d], "model", axis=1, tiled=True)
    bot = jax.lax.all_gather(w1[d:], "model", axis=1, tiled=True)
    b1_full = jax.lax.all_gather(b1, "model", axis=0, tiled=True)
    h_full = jax.nn.relu(x[:, :d] @ top + x[:, d:] @ bot + b1_full)
    h = jax.lax.dynamic_slice_in_dim(h_full, i * c, c, axis=1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS, check_vma=False))
