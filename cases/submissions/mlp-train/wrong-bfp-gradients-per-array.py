"""mlp-train, WRONG (numerically): gradient compression before the pmean over 'data'. Each device
rounds each of its local gradient blocks (gw1, gb1, gw2, gb2) to block floating point -- one
exponent per array, that of its largest |element|, each element a integer multiple of the
largest times 2^-22 -- then pmeans them (and the loss) and steps. Forward pass as the gallery's right.py.

Why it is wrong: targets on different scales (y's column 0 in the tens of millions, column 1 in
units) give gw2 and gb2 columns 1e7 apart; the small column is rounded to the large one's grid and
its update is off by ~1 gradient unit (truth15.py mixed: w2[:, 1:] and b2[1:] outside the tolerance
on every mesh; the gallery's right.py none). The grader's draws keep every input's elements within a factor 4 of each other,
where the rounding hides below float32's own."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


SPECS = dict(in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                       P("model", None), P(), P()),
             out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()))


def bfp(t, bits=22):
    """t rounded to a grid of (its max |t|) * 2^-bits."""
    m = jnp.max(jnp.abs(t))
    s = jnp.where(m > 0, m, 1.0) * (2.0 ** -bits)
    return jnp.round(t / s) * s


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2, lr):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    grads = tuple(bfp(g) for g in grads)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), **SPECS))
