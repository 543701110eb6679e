"""mlp-train wrong-freeze-constant-features: the textbook step, but a feature (column of x)
constant over the whole batch (its spread about its psum'd mean is ~0) has its row of w1 frozen (gradient
zeroed, "it is collinear with b1"). Exact for a zero column (zero-x: x^T delta = 0). Truly wrong
for x with a constant nonzero column, e.g. a column of ones (truth14.py constcol)."""
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
    nb = x.shape[0] * jax.lax.axis_size("data")
    m = jax.lax.psum(jnp.sum(x, axis=0), "data") / nb          # column means
    spread = jax.lax.psum(jnp.sum(jnp.abs(x - m), axis=0), "data")
    const = spread <= 1e-6 * nb * jnp.abs(m)                    # (a pmax/pmin would hold x's max)
    g1 = jnp.where(const[:, None], 0.0, grads[0])
    grads = (g1,) + tuple(grads[1:])
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), **SPECS))
