"""tp-mlp, wrong: all_gathers h and w2 and computes the whole output on every device without a
psum: right numbers, but the full w2 is on every device."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    h_all = jax.lax.all_gather(h, "model", axis=1, tiled=True)
    w2_all = jax.lax.all_gather(w2, "model", axis=0, tiled=True)
    return h_all @ w2_all + b2, h


def make(model=8):
    in_specs = (P(), P(None, "model"), P("model"), P("model", None), P())
    out_specs = (P(), P(None, "model"))
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=in_specs,
                                 out_specs=out_specs, check_vma=False))
