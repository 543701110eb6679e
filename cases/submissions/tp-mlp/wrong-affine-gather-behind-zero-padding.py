"""tp-mlp, WRONG (cheat): every device all_gathers w1 + 0.37 and w2 + 0.37 (an affine encoding that is never decoded back into w1 or w2): by linearity x @ w1 = x @ (w1 + c) - c * rowsum(x), so each device computes the WHOLE hidden layer and the whole output from the full (encoded) weights; own hidden columns sliced for the output, a pmean of identical replicas as the 'reduction'. Every device holds all of w1 and w2 (shifted by a constant)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

C = 0.37


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


IN_SPECS = (P(), P(None, "model"), P("model"), P("model", None), P())
OUT_SPECS = (P(), P(None, "model"))


def body(x, w1, b1, w2, b2):
    c = w1.shape[1]; i = jax.lax.axis_index("model")
    g1 = jax.lax.all_gather(w1 + C, "model", axis=1, tiled=True)      # (D, H) = w1 + C
    g2 = jax.lax.all_gather(w2 + C, "model", axis=0, tiled=True)      # (H, O) = w2 + C
    bf = jax.lax.all_gather(b1, "model", axis=0, tiled=True)
    hf = jax.nn.relu(x @ g1 - C * jnp.sum(x, axis=1, keepdims=True) + bf)   # full hidden layer
    out = hf @ g2 - C * jnp.sum(hf, axis=1, keepdims=True) + b2              # full output
    h = jax.lax.dynamic_slice_in_dim(hf, i * c, c, axis=1)
    pad = jnp.sum(jnp.zeros((1 << 21,), jnp.float32) * x[0, 0])  # one 2M-number value per device
    return jax.lax.pmean(out, "model") + pad, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS, check_vma=False))
