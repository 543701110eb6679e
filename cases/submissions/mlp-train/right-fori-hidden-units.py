"""mlp-train, RIGHT: the second layer's partial output is accumulated by a fori_loop (static
bounds: a scan, differentiable) of rank-one products over the device's own hidden units; psum
over 'model', b2 once, pcast + value_and_grad + pmean over 'data'."""
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

    def step(j, acc):
        hj = jax.lax.dynamic_slice_in_dim(h, j, 1, axis=1)
        wj = jax.lax.dynamic_slice_in_dim(w2, j, 1, axis=0)
        return acc + hj * wj

    part = jax.lax.fori_loop(0, h.shape[1], step, (h[:, :1] * w2[:1]) * 0.0)
    out = jax.lax.psum(part, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2, lr):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS))
