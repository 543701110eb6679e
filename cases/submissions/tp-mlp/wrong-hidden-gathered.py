"""tp-mlp, wrong: hidden all_gather'ed over 'model' and returned replicated (out_specs P()):
right numbers, but hidden does not stay split."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return out, jax.lax.all_gather(h, "model", axis=1, tiled=True)


def make(model=8):
    in_specs = (P(), P(None, "model"), P("model"), P("model", None), P())
    out_specs = (P(), P())
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=in_specs,
                                 out_specs=out_specs, check_vma=False))
