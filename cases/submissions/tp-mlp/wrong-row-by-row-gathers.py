"""tp-mlp, WRONG (cheat): w1 gathered one row at a time (D separate all_gathers), each row used at a different time as a rank-one update of the full hidden pre-activation: every device holds all of w1 and computes the whole hidden layer."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


IN_SPECS = (P(), P(None, "model"), P("model"), P("model", None), P())
OUT_SPECS = (P(), P(None, "model"))


def make(model=8):
    return jax.jit(jax.shard_map(lambda *a: body(model, *a), mesh=mesh_of(model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS, check_vma=False))


def body(n, x, w1, b1, w2, b2):
    c = w1.shape[1]; i = jax.lax.axis_index("model")
    z = jax.lax.all_gather(b1, "model", axis=0, tiled=True)[None, :]
    for r in range(w1.shape[0]):
        row = jax.lax.all_gather(w1[r], "model", axis=0, tiled=True)
        z = z + x[:, r:r + 1] * row[None, :]
    h = jax.lax.dynamic_slice_in_dim(jax.nn.relu(z), i * c, c, axis=1)
    return jax.lax.psum(h @ w2, "model") + b2, h
