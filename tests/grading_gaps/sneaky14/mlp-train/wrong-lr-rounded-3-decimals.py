"""mlp-train wrong-lr-rounded-3-decimals: the textbook step (pcast over 'data', value_and_grad,
psum over 'model' in the forward pass, one pmean over 'data'), but lr = jnp.round(lr, 3) first.
Every case's lr (0.2, 0.1, 0.05, 0.02, 0.01) and the grader's doubled / 256x lrs have at most 3
decimals: exact there. Truly wrong: lr = 0.0125 or 0.1234 steps with a rounded lr (truth14.py).
Control of wrong-lr-rounded-3-significant-digits: the grader FAILs it (the lr / 256 draw:
0.001 / 256 rounds to 0). Kept as a correctly judged entry."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


SPECS = dict(in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                       P("model", None), P(), P()),
             out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()))


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2, lr):
    lr = jnp.round(lr, 3)
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), **SPECS))
