"""tp-mlp, wrong: all_gathers w1 and b1 over 'model', computes the full hidden layer on every
device, then keeps its own block of it. Right numbers, but the full w1 is in every device."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def body(x, w1, b1, w2, b2):
    w1_full = jax.lax.all_gather(w1, "model", axis=1, tiled=True)
    b1_full = jax.lax.all_gather(b1, "model", axis=0, tiled=True)
    h_full = jax.nn.relu(x @ w1_full + b1_full)
    cols = w1.shape[1]
    h = jax.lax.dynamic_slice_in_dim(h_full, jax.lax.axis_index("model") * cols, cols, axis=1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return out, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), **SPECS))
