"""tp-mlp, WRONG (cheat): each column of w1 scaled by its own factor (3 for even hidden units, 5 for odd) and each row of w2 likewise, then all_gathered: no single factor makes the gathered value a copy of w1. (x @ (w1 * s)) / s is the full pre-activation; every device computes the whole hidden layer and output from all of w1 and w2; pmean of identical replicas as the 'reduction'."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


IN_SPECS = (P(), P(None, "model"), P("model"), P("model", None), P())
OUT_SPECS = (P(), P(None, "model"))


def body(x, w1, b1, w2, b2):
    c = w1.shape[1]; i = jax.lax.axis_index("model")
    col = i * c + jnp.arange(c)                       # global hidden index of my columns
    s = jnp.where(col % 2 == 0, 3.0, 5.0).astype(jnp.float32)
    g1 = jax.lax.all_gather(w1 * s[None, :], "model", axis=1, tiled=True)
    g2 = jax.lax.all_gather(w2 * s[:, None], "model", axis=0, tiled=True)
    sf = jax.lax.all_gather(s, "model", axis=0, tiled=True)
    bf = jax.lax.all_gather(b1, "model", axis=0, tiled=True)
    hf = jax.nn.relu((x @ g1) / sf + bf)
    out = (hf / sf) @ g2 + b2
    h = jax.lax.dynamic_slice_in_dim(hf, i * c, c, axis=1)
    return jax.lax.pmean(out, "model"), h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS, check_vma=False))
