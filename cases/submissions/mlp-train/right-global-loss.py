"""mlp-train, right: differentiates the global loss pmean(local loss, 'data') w.r.t. the
parameters as they come (invariant over 'data'): grad's transpose sums the 1/d-scaled local
gradients."""
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
    def global_loss(*p):
        return jax.lax.pmean(loss_fn(x, y, *p), "data")

    loss, grads = jax.value_and_grad(global_loss, argnums=(0, 1, 2, 3))(w1, b1, w2, b2)
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    in_specs = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None),
                P(), P())
    out_specs = (P(None, "model"), P("model"), P("model", None), P(), P())
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=in_specs,
                                 out_specs=out_specs))
