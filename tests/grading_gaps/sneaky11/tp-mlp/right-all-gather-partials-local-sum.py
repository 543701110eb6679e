"""tp-mlp, right: an all-reduce of its own -- each device all_gathers the n partial outputs h_blk @ w2_blk
(B, O each) over 'model' and sums the stack locally, b2 added once after."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    parts = jax.lax.all_gather(h @ w2, "model")          # (n, B, O): every device's partial output
    return jnp.sum(parts, axis=0) + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
