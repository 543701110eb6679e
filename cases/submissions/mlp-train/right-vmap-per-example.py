"""mlp-train, right: per-example losses by vmap, their mean differentiated, one pmean."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def one(xi, yi, w1, b1, w2, b2):
    h = jax.nn.relu(xi @ w1 + b1)
    out = h @ w2
    return out


def body(x, y, w1, b1, w2, b2, lr):
    def loss_of(w1, b1, w2, b2):
        parts = jax.vmap(one, in_axes=(0, 0, None, None, None, None))(x, y, w1, b1, w2, b2)
        out = jax.lax.psum(parts, "model") + b2
        return jnp.mean(jnp.sum((out - y) ** 2, axis=1))

    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(loss_of, argnums=(0, 1, 2, 3))(*params)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    in_specs = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None),
                P(), P())
    out_specs = (P(None, "model"), P("model"), P("model", None), P(), P())
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=in_specs,
                                 out_specs=out_specs))
