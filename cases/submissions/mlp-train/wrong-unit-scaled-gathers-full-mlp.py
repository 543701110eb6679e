"""mlp-train, WRONG (cheat): every device all_gathers w1 (columns) and w2 (rows) over 'model', each hidden unit scaled by its own factor (3 for even units, 5 for odd: no single factor makes the gathered value a copy), and b1; it then runs the WHOLE MLP (all H hidden units) forward and backward on its rows itself -- forward h = relu((x @ G1) / s + b1), out = (h / s) @ G2 + b2 with G1 = w1 * s, G2 = s * w2, and the backward written by hand keeping every hidden-sized value unit-scaled (dz * s), its own units' gradients sliced out. No psum over 'model' at all; gradients pmean'ed over 'data'. Every device holds all of w1 and w2 and does every model device's work."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P())
OUT_SPECS = (P(None, "model"), P("model"), P("model", None), P(), P())


def body(x, y, w1, b1, w2, b2, lr):
    c = w1.shape[1]; j = jax.lax.axis_index("model")
    s = jnp.where((j * c + jnp.arange(c)) % 2 == 0, 3.0, 5.0).astype(jnp.float32)
    G1 = jax.lax.all_gather(w1 * s[None, :], "model", axis=1, tiled=True)
    G2 = jax.lax.all_gather(w2 * s[:, None], "model", axis=0, tiled=True)
    S = jax.lax.all_gather(s, "model", axis=0, tiled=True)
    B1 = jax.lax.all_gather(b1, "model", axis=0, tiled=True)

    # forward and backward of the whole MLP, by hand, every (B, H) value kept unit-scaled
    z = (x @ G1) / S + B1
    mask = (z > 0).astype(jnp.float32)
    hs = jax.nn.relu(z) / S                      # h / s
    out = hs @ G2 + b2
    r = out - y
    loss = jnp.mean(jnp.sum(r * r, axis=1))
    g = 2.0 * r / x.shape[0]
    gw2 = jax.lax.dynamic_slice_in_dim((hs.T @ g) * S[:, None], j * c, c, axis=0)   # h^T g
    gb2 = jnp.sum(g, axis=0)
    dzs = (g @ G2.T) * mask                      # dz * s
    gw1 = jax.lax.dynamic_slice_in_dim((x.T @ dzs) / S[None, :], j * c, c, axis=1)
    gb1 = jax.lax.dynamic_slice_in_dim(jnp.sum(dzs, axis=0) / S, j * c, c, axis=0)
    loss, gw1, gb1, gw2, gb2 = jax.lax.pmean((loss, gw1, gb1, gw2, gb2), "data")
    return w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2, loss


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS, check_vma=False))
