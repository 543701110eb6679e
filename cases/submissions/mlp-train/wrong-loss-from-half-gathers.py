"""mlp-train, WRONG (cheat: the gather split in two): the gradients are right, but the loss is
computed from the full w1, all_gather'ed over 'model' in two pieces (its top rows and its bottom
rows, each holding part of w1) -- every device holds all of w1 and computes the full hidden layer."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P())
OUT_SPECS = (P(None, "model"), P("model"), P("model", None), P(), P())


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def legit_grads(x, y, w1, b1, w2, b2):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    return jax.lax.pmean((loss, grads), "data")


def body(x, y, w1, b1, w2, b2, lr):
    _, grads = legit_grads(x, y, w1, b1, w2, b2)
    d = w1.shape[0] // 2
    c = w1.shape[1]
    i = jax.lax.axis_index("model")
    top = jax.lax.all_gather(w1[:d], "model", axis=1, tiled=True, to="invarying")
    bot = jax.lax.all_gather(w1[d:], "model", axis=1, tiled=True, to="invarying")
    b1f = jax.lax.all_gather(b1, "model", axis=0, tiled=True, to="invarying")
    hf = jax.nn.relu(x[:, :d] @ top + x[:, d:] @ bot + b1f)
    h = jax.lax.dynamic_slice_in_dim(hf, i * c, c, axis=1)
    out = jax.lax.psum(h @ w2, "model") + b2
    loss = jax.lax.pmean(jnp.mean(jnp.sum((out - y) ** 2, axis=1)), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS))
