"""tp-mlp, WRONG: the full w1 assembled on every device by a scan over w1's rows, each row
all_gather'ed over 'model' inside a nested jax.jit (the stacked ys are all of w1); the full
hidden layer computed from it, the device's columns kept."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))

gather_row = jax.jit(lambda r: jax.lax.all_gather(r, "model", tiled=True))


def body(x, w1, b1, w2, b2):
    cols = w1.shape[1]
    i = jax.lax.axis_index("model")
    _, w1_full = jax.lax.scan(lambda c, r: (c, gather_row(r)), 0.0, w1)   # (D, H): all of w1
    b1_full = jax.lax.all_gather(b1, "model", tiled=True)
    h_full = jax.nn.relu(x @ w1_full + b1_full)
    h = jax.lax.dynamic_slice_in_dim(h_full, i * cols, cols, axis=1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), check_vma=False, **SPECS))
