"""mlp-train, right: value_and_grad with has_aux (hidden as aux)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def loss_aux(p, x, y):
    w1, b1, w2, b2 = p
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1)), h


def body(x, y, w1, b1, w2, b2, lr):
    params = (w1, b1, w2, b2)
    (loss, _h), grads = jax.value_and_grad(loss_aux, has_aux=True)(
        jax.lax.pcast(params, "data", to="varying"), x, y)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    return (*(p - lr * g for p, g in zip(params, grads)), loss)


def make(data=2, model=4):
    in_specs = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None),
                P(), P())
    out_specs = (P(None, "model"), P("model"), P("model", None), P(), P())
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=in_specs,
                                 out_specs=out_specs))
