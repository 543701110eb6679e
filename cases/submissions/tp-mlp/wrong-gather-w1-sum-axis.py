"""tp-mlp, wrong (issue #47.1): the full w1 all_gather'ed on every device, laundered first through
a sum over an added axis of length 1 (`jnp.sum(w1[None], axis=0)` is w1, element for element)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def body(x, w1, b1, w2, b2):
    cols = w1.shape[1]
    i = jax.lax.axis_index("model")
    w1_full = jax.lax.all_gather(jnp.sum(w1[None], axis=0), "model", axis=1, tiled=True)
    b1_full = jax.lax.all_gather(jnp.sum(b1[None], axis=0), "model", axis=0, tiled=True)
    h_full = jax.nn.relu(x @ w1_full + b1_full)
    h = jax.lax.dynamic_slice_in_dim(h_full, i * cols, cols, axis=1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), **SPECS))
