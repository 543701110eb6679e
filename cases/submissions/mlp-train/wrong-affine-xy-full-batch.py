"""mlp-train, WRONG (cheat): every device all_gathers x + 0.37 and y + 0.37 over 'data' (an affine encoding, never decoded: x @ w1 + b1 = (x + c) @ w1 + (b1 - c colsum(w1)), x^T dz = (x + c)^T dz - c colsum(dz); the loss expanded as sum out^2 - 2 sum out*(y + c) + 2c sum out + sum (y + c)^2 - 2c sum (y + c) + B O c^2; backward by hand) and computes the FULL-batch loss and gradients of its model slice itself (psum over 'model' as asked); the 'mean over data' is a pmean of identical replicas. Every device holds the whole batch (shifted) and does every data device's work."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

C = 0.37


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P())
OUT_SPECS = (P(None, "model"), P("model"), P("model", None), P(), P())


def body(x, y, w1, b1, w2, b2, lr):
    xe = jax.lax.all_gather(x + C, "data", axis=0, tiled=True)
    ye = jax.lax.all_gather(y + C, "data", axis=0, tiled=True)
    B, O = ye.shape
    syy = jnp.sum(ye * ye) - 2.0 * C * jnp.sum(ye) + B * O * C * C

    z = xe @ w1 + (b1 - C * jnp.sum(w1, axis=0))          # = x @ w1 + b1, the whole batch
    h = jax.nn.relu(z)
    out = jax.lax.psum(h @ w2, "model") + b2
    loss = (jnp.sum(out * out) - 2.0 * jnp.sum(out * ye) + 2.0 * C * jnp.sum(out) + syy) / B
    g = ((out - ye) + C) * (2.0 / B)                         # 2 (out - y) / B, backward by hand
    gb2 = jnp.sum(g, axis=0)
    gw2 = h.T @ g
    dz = (g @ w2.T) * (z > 0).astype(jnp.float32)
    gw1 = xe.T @ dz - C * jnp.sum(dz, axis=0)[None, :]
    gb1 = jnp.sum(dz, axis=0)
    loss, gw1, gb1, gw2, gb2 = jax.lax.pmean((loss, gw1, gb1, gw2, gb2), "data")
    return w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2, loss


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS, check_vma=False))
