"""tp-mlp, RIGHT (odd-but-valid layout): w1 is handed to the shard_map transposed, w1^T (H, D) with in_specs P('model', None) -- split along its first dimension, which is w1's hidden units -- so every device receives exactly its own H/n columns of w1 (as rows) and nothing else; it computes relu(x @ (w1_j^T)^T + b1_j), multiplies by its rows of w2, psums over 'model', adds b2 once."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1t, b1, w2, b2):
    h = jax.nn.relu(x @ w1t.T + b1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    sm = jax.shard_map(body, mesh=mesh_of(model),
                       in_specs=(P(), P("model", None), P("model"), P("model", None), P()),
                       out_specs=(P(), P(None, "model")))
    return jax.jit(lambda x, w1, b1, w2, b2: sm(x, w1.T, b1, w2, b2))
