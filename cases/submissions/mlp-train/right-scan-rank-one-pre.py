"""mlp-train, RIGHT: as the gallery's right.py, but the first layer's x_block @ w1_block is
written as a lax.scan over the contraction (D steps), adding the outer product of x's column k
and w1's row k -- each device still holds only its blocks (D * B/d of x's elements in all)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


SPECS = dict(in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                       P("model", None), P(), P()),
             out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()))


def matmul_by_outer_products(x, w):
    acc = jnp.zeros((x.shape[0], w.shape[1]), x.dtype)
    acc = jax.lax.pcast(acc, ('data', 'model'), to='varying')  # the carry varies as its terms do
    acc, _ = jax.lax.scan(lambda a, kw: (a + jnp.outer(kw[0], kw[1]), None), acc, (x.T, w))
    return acc


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(matmul_by_outer_products(x, w1) + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2, lr):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), **SPECS))
