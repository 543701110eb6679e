"""tp-mlp, wrong: gathers the full w1 on every device, disguised by mixing in 0 * x[0, 0] (the
value depends on two inputs; it still holds every element of w1)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


IN_SPECS = (P(), P(None, "model"), P("model"), P("model", None), P())
OUT_SPECS = (P(), P(None, "model"))


def body(x, w1, b1, w2, b2):
    w1_full = jax.lax.all_gather(w1 + 0.0 * x[0, 0], "model", axis=1, tiled=True)
    b1_full = jax.lax.all_gather(b1, "model", axis=0, tiled=True)
    h_full = jax.nn.relu(x @ w1_full + b1_full)
    cols = w1.shape[1]
    h = jax.lax.dynamic_slice_in_dim(h_full, jax.lax.axis_index("model") * cols, cols, axis=1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS))
