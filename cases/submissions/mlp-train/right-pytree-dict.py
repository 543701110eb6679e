"""mlp-train, right: parameters as a dict, grads pmean'd and the update done by jax.tree.map."""
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
    params = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}

    def loss_of(p):
        return loss_fn(x, y, p["w1"], p["b1"], p["w2"], p["b2"])

    loss, grads = jax.value_and_grad(loss_of)(jax.lax.pcast(params, "data", to="varying"))
    grads = jax.tree.map(lambda g: jax.lax.pmean(g, "data"), grads)
    new = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    return new["w1"], new["b1"], new["w2"], new["b2"], jax.lax.pmean(loss, "data")


def make(data=2, model=4):
    in_specs = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None),
                P(), P())
    out_specs = (P(None, "model"), P("model"), P("model", None), P(), P())
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=in_specs,
                                 out_specs=out_specs))
