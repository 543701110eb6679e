"""mlp-train, RIGHT (odd-but-valid layout): x is handed to the shard_map transposed, x^T (D, B) with in_specs P(None, 'data') -- split along its second dimension, which is x's rows -- so device (i, j) receives exactly its data shard's rows (as columns) and nothing else; the body transposes back and runs the reference step (pcast, value_and_grad, psum over 'model', pmean over 'data')."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P(None, "data"), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P())
OUT_SPECS = (P(None, "model"), P("model"), P("model", None), P(), P())


def body(xt, y, w1, b1, w2, b2, lr):
    x = xt.T

    def loss_fn(w1, b1, w2, b2):
        out = jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2, "model") + b2
        return jnp.mean(jnp.sum((out - y) ** 2, axis=1))
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, g = jax.value_and_grad(loss_fn, argnums=(0, 1, 2, 3))(*params)
    loss, g = jax.lax.pmean((loss, g), "data")
    return (*(p - lr * gp for p, gp in zip((w1, b1, w2, b2), g)), loss)


def make(data=2, model=4):
    sm = jax.shard_map(body, mesh=mesh_of(data, model), in_specs=IN_SPECS, out_specs=OUT_SPECS)
    return jax.jit(lambda x, *rest: sm(x.T, *rest))
