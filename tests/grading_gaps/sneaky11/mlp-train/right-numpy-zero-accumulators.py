"""mlp-train, right: gradient accumulation over the block's two row halves (a Python loop), the
accumulators started from module-level numpy zeros of the parameters' block shapes (closed over), one
pmean over 'data' at the end. Textbook numbers."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.sum((out - y) ** 2)


def body(x, y, w1, b1, w2, b2, lr):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    acc = [np.zeros(p.shape, np.float32) for p in (w1, b1, w2, b2)]
    total = np.zeros((), np.float32)
    r = x.shape[0]
    halves = [(0, r // 2), (r // 2, r)] if r > 1 else [(0, r)]
    for a, bnd in halves:
        l, g = jax.value_and_grad(lambda *p: loss_fn(x[a:bnd], y[a:bnd], *p), argnums=(0, 1, 2, 3))(*params)
        acc = [s + gg for s, gg in zip(acc, g)]
        total = total + l
    loss, grads = jax.lax.pmean((total / r, [s / r for s in acc]), "data")
    return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
        in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P()),
        out_specs=(P(None, "model"), P("model"), P("model", None), P(), P())))
