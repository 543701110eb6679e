"""tp-mlp, wrong: w2 replicated (P()), each device slices its rows by axis_index: right numbers,
but every device holds the full w2."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    rows = w1.shape[1]
    w2b = jax.lax.dynamic_slice_in_dim(w2, jax.lax.axis_index("model") * rows, rows, axis=0)
    h = jax.nn.relu(x @ w1 + b1)
    return jax.lax.psum(h @ w2b, "model") + b2, h


def make(model=8):
    in_specs = (P(), P(None, "model"), P("model"), P(), P())
    out_specs = (P(), P(None, "model"))
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=in_specs,
                                 out_specs=out_specs))
