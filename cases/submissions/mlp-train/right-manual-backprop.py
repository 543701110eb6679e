"""mlp-train, right: the backward pass written by hand (the spec's formulas), one pmean over
'data'."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, y, w1, b1, w2, b2, lr):
    rows = x.shape[0]
    z = x @ w1 + b1
    h = jnp.maximum(z, 0.0)
    out = jax.lax.psum(h @ w2, "model") + b2
    r = out - y
    loss = jnp.sum(r * r) / rows
    g = 2.0 * r / rows
    dw2 = h.T @ g
    db2 = jnp.sum(g, axis=0)
    dz = (g @ w2.T) * (z > 0)
    dw1 = x.T @ dz
    db1 = jnp.sum(dz, axis=0)
    loss, dw1, db1, dw2, db2 = jax.lax.pmean((loss, dw1, db1, dw2, db2), "data")
    return w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2, loss


def make(data=2, model=4):
    in_specs = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None),
                P(), P())
    out_specs = (P(None, "model"), P("model"), P("model", None), P(), P())
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=in_specs,
                                 out_specs=out_specs, check_vma=False))
