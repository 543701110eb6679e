"""mlp-train, RIGHT (optax style: gradients from the shard_map, the update outside it): the
shard_map computes the loss and the mean gradients exactly as the reference does (own rows, own
hidden units, psum of the partial outputs over 'model', b2 once, pmean over 'data') and returns
the gradients with the parameters' own specs; the SGD update p - lr * g is applied OUTSIDE the
shard_map, by jax.tree.map on the (sharded) parameter arrays -- what an optimizer library does."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


PSPECS = (P(None, "model"), P("model"), P("model", None), P())


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    return jax.lax.pmean((loss, grads), "data")


def make(data=2, model=4):
    sm = jax.shard_map(body, mesh=mesh_of(data, model),
                       in_specs=(P("data", None), P("data", None)) + PSPECS,
                       out_specs=(P(), PSPECS))

    def step(x, y, w1, b1, w2, b2, lr):
        loss, grads = sm(x, y, w1, b1, w2, b2)
        new = jax.tree.map(lambda p, g: p - lr * g, (w1, b1, w2, b2), grads)
        return (*new, loss)
    return jax.jit(step)
