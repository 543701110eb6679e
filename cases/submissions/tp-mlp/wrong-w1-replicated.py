"""tp-mlp, wrong: w1 and b1 replicated (P()), each device slices its columns by axis_index:
right numbers, but every device holds the full w1."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    cols = w2.shape[0]
    i = jax.lax.axis_index("model") * cols
    w1b = jax.lax.dynamic_slice_in_dim(w1, i, cols, axis=1)
    b1b = jax.lax.dynamic_slice_in_dim(b1, i, cols)
    h = jax.nn.relu(x @ w1b + b1b)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    in_specs = (P(), P(), P(), P("model", None), P())
    out_specs = (P(), P(None, "model"))
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=in_specs,
                                 out_specs=out_specs))
