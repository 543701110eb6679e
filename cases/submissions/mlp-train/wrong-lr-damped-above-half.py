"""mlp-train, WRONG (the wrong step for large lr): the textbook step (own rows, own hidden
units, psum of the partial outputs over 'model', b2 once, pmean over 'data'), but the step size is
a "warm" schedule min(lr, 0.5) + 0.1 * max(lr - 0.5, 0): for lr up to 0.5 it is lr itself (every
case's lr is at most 0.2, and the grader's doubling test reaches 0.4), above it the update is
damped. The exercise asks for p - lr * mean gradient for every positive lr."""
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
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    eff = jnp.minimum(lr, 0.5) + 0.1 * jnp.maximum(lr - 0.5, 0.0)
    new = tuple(p - eff * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), **SPECS))
