"""mlp-train, wrong (issue #47.1): the full w2 all_gather'ed over 'model' on every device,
laundered first through a sum over an added axis of length 1; each device then slices its own
rows back out, so the numbers are right and the whole w2 sits on every device."""
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
    rows = w2.shape[0]
    i = jax.lax.axis_index("model")
    w2_full = jax.lax.all_gather(jnp.sum(w2[None], axis=0), "model", axis=0, tiled=True)
    w2_own = jax.lax.dynamic_slice_in_dim(w2_full, i * rows, rows, axis=0)
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2_own, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2, lr):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), **SPECS))
