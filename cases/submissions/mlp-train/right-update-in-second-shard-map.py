"""mlp-train right-update-in-second-shard-map: a first shard_map computes the loss and the mean
gradients (pcast, value_and_grad, pmean over 'data') and returns them with the parameters' own
specs; a second shard_map, on the same mesh and specs, applies p - lr * g on every device (an
optimizer kept as its own sharded step, as optax-with-shard_map code does)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


PS = (P(None, "model"), P("model"), P("model", None), P())


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def grads_body(x, y, w1, b1, w2, b2):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    return jax.lax.pmean((loss, grads), "data")


def sgd_body(w1, b1, w2, b2, g1, gb1, g2, gb2, lr):
    return tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), (g1, gb1, g2, gb2)))


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    f = jax.shard_map(grads_body, mesh=mesh,
                      in_specs=(P("data", None), P("data", None), *PS), out_specs=(P(), PS))
    u = jax.shard_map(sgd_body, mesh=mesh, in_specs=(*PS, *PS, P()), out_specs=PS)

    def prog(x, y, w1, b1, w2, b2, lr):
        loss, g = f(x, y, w1, b1, w2, b2)
        return (*u(w1, b1, w2, b2, *g, lr), loss)
    return jax.jit(prog)
