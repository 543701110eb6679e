"""tp-mlp, WRONG (cheat): w1 and w2 split into hi = reduce_precision(w, 8 exponent, 10 mantissa bits) and lo = w - hi; hi and lo all_gathered separately and never added back together: x @ w1 computed as x @ hi + x @ lo. Every device holds all of w1 and w2 (as two float pieces) and computes the whole hidden layer and output itself; pmean of identical replicas as the 'reduction'."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


IN_SPECS = (P(), P(None, "model"), P("model"), P("model", None), P())
OUT_SPECS = (P(), P(None, "model"))


def split(v):
    hi = jax.lax.reduce_precision(v, exponent_bits=8, mantissa_bits=10)
    return hi, v - hi


def body(x, w1, b1, w2, b2):
    c = w1.shape[1]; i = jax.lax.axis_index("model")
    h1, l1 = split(w1); h2, l2 = split(w2)
    H1 = jax.lax.all_gather(h1, "model", axis=1, tiled=True)
    L1 = jax.lax.all_gather(l1, "model", axis=1, tiled=True)
    H2 = jax.lax.all_gather(h2, "model", axis=0, tiled=True)
    L2 = jax.lax.all_gather(l2, "model", axis=0, tiled=True)
    bf = jax.lax.all_gather(b1, "model", axis=0, tiled=True)
    hf = jax.nn.relu((x @ H1 + x @ L1) + bf)
    out = (hf @ H2 + hf @ L2) + b2
    h = jax.lax.dynamic_slice_in_dim(hf, i * c, c, axis=1)
    return jax.lax.pmean(out, "model"), h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS, check_vma=False))
