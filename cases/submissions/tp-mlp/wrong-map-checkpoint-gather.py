"""tp-mlp, WRONG: the full w1 assembled on every device by jax.lax.map over w1's rows, each row
gathered by a jax.checkpoint'ed all_gather; hidden computed whole, the device's columns kept."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


@jax.checkpoint
def gather_row(r):
    return jax.lax.all_gather(r, "model", tiled=True)


def body(x, w1, b1, w2, b2):
    cols = w1.shape[1]
    i = jax.lax.axis_index("model")
    w1_full = jax.lax.map(gather_row, w1)
    b1_full = jax.lax.all_gather(b1, "model", tiled=True)
    h = jax.lax.dynamic_slice_in_dim(jax.nn.relu(x @ w1_full + b1_full), i * cols, cols, axis=1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), check_vma=False, **SPECS))
