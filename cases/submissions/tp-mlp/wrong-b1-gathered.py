"""tp-mlp, WRONG (sneaky9's class E): every device all_gathers b1 over 'model' and slices its own
block back out by axis_index -- right numbers, but every device holds the full b1, a weight the
exercise splits by hidden units."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    c = b1.shape[0]
    b1_full = jax.lax.all_gather(b1, "model", axis=0, tiled=True)
    mine = jax.lax.dynamic_slice_in_dim(b1_full, jax.lax.axis_index("model") * c, c)
    h = jax.nn.relu(x @ w1 + mine)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
