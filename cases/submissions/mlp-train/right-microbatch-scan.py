"""mlp-train right-microbatch-scan: gradient accumulation -- each device scans its (B/d) rows one
micro-batch (one row) at a time, the forward pass psum'd over 'model' per micro-batch, summing the
per-row losses and gradients; then divides by its row count and pmeans over 'data' once."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


SPECS = dict(in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                       P("model", None), P(), P()),
             out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()))


def row_loss(xr, yr, w1, b1, w2, b2):
    h = jax.nn.relu(xr @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.sum((out - yr) ** 2)


def body(x, y, w1, b1, w2, b2, lr):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    vg = jax.value_and_grad(row_loss, argnums=(2, 3, 4, 5))

    def step(acc, xy):
        l, g = vg(xy[0][None], xy[1][None], *params)
        return (acc[0] + l, jax.tree.map(jnp.add, acc[1], g)), None

    zero = (jax.lax.pcast(jnp.zeros((), jnp.float32), "data", to="varying"),
            jax.tree.map(jnp.zeros_like, params))
    (loss, grads), _ = jax.lax.scan(step, zero, (x, y))
    r = x.shape[0]
    loss, grads = jax.lax.pmean((loss / r, jax.tree.map(lambda g: g / r, grads)), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), **SPECS))
