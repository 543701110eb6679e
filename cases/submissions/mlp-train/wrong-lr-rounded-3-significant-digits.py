"""mlp-train wrong-lr-rounded-3-significant-digits: the textbook step, but the step size is first rounded
to 3 significant digits (lr = round(lr / 10^(e-2)) 10^(e-2), e = floor(log10 lr): "as the config prints it").
Every case's lr has 1 significant digit (0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.001), and the grader's
lr variants (doubled, times 256, over 256: 2.56, 76.8, 3.90625e-4 -> 3.91e-4) have at most 3 or
move the update by < 0.2% of an update that is tiny at the small draw. Truly wrong: lr = 0.12345
steps with 0.123, lr = 0.0012345 with 0.00123 (0.4% of the update; truth14.py lr). lr is the one
float input the grader never draws (kept, then scaled by powers of two). (The control
wrong-lr-rounded-3-decimals, rounding to 3 decimals, fails at the lr / 256 draw.)"""
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
    e = jnp.floor(jnp.log10(lr)) - 2           # lr to 3 significant digits
    q = 10.0 ** e
    lr = jnp.round(lr / q) * q
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), **SPECS))
