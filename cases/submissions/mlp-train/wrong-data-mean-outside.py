"""mlp-train, WRONG (skips the mean over 'data'): each device computes its rows' loss and gradients legitimately (psum over 'model' as asked), but the 'pmean over data' is run with axis_index_groups of one device each (it averages nothing); the per-data-device results come out stacked (out_specs P('data', ...)) and are averaged OUTSIDE the shard_map with jnp.mean, on one device, where the update is applied too."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P())
OUT_SPECS = (P("data", None, "model"), P("data", "model"), P("data", "model", None), P("data"), P("data"))


def body(d, m, x, y, w1, b1, w2, b2):
    z = x @ w1 + b1
    h = jax.nn.relu(z)
    out = jax.lax.psum(h @ w2, "model") + b2
    loss = jnp.mean(jnp.sum((out - y) ** 2, axis=1))
    g = 2.0 * (out - y) / x.shape[0]                         # backward by hand
    gb2 = jnp.sum(g, axis=0)
    gw2 = h.T @ g
    dz = (g @ w2.T) * (z > 0).astype(jnp.float32)
    gw1 = x.T @ dz
    gb1 = jnp.sum(dz, axis=0)
    groups = [[k] for k in range(d)]
    if d > 1:
        loss, gw1, gb1, gw2, gb2 = jax.lax.pmean((loss, gw1, gb1, gw2, gb2), "data",
                                                 axis_index_groups=groups)
    return gw1[None], gb1[None], gw2[None], gb2[None], loss[None]


def make(data=2, model=4):
    sm = jax.shard_map(lambda *a: body(data, model, *a), mesh=mesh_of(data, model),
                       in_specs=IN_SPECS, out_specs=OUT_SPECS, check_vma=False)

    def f(x, y, w1, b1, w2, b2, lr):
        gw1, gb1, gw2, gb2, ls = sm(x, y, w1, b1, w2, b2)
        mean = lambda g: jnp.mean(g, axis=0)
        return (w1 - lr * mean(gw1), b1 - lr * mean(gb1), w2 - lr * mean(gw2), b2 - lr * mean(gb2),
                mean(ls))
    return jax.jit(f)
