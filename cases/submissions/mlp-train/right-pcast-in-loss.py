"""mlp-train, right: the pcast over 'data' inside the differentiated function (its transpose
psums the gradients over 'data'), divided by the data size; the loss pmean'd."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2, lr):
    def loss_of(*p):
        return loss_fn(x, y, *jax.lax.pcast(p, "data", to="varying"))

    loss, grads = jax.value_and_grad(loss_of, argnums=(0, 1, 2, 3))(w1, b1, w2, b2)
    n = jax.lax.axis_size("data")
    new = tuple(p - lr * (g / n) for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, jax.lax.pmean(loss, "data"))


def make(data=2, model=4):
    in_specs = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None),
                P(), P())
    out_specs = (P(None, "model"), P("model"), P("model", None), P(), P())
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=in_specs,
                                 out_specs=out_specs))
