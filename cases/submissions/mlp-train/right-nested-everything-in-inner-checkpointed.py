"""mlp-train, RIGHT (nested; the whole step inside the inner map, rematerialised): outer
shard_map manual over 'data' only does nothing but call the inner one (manual over 'model'),
which gets x, y rows, its weight blocks and lr, runs a jax.checkpoint'ed loss (psum over 'model'),
pmeans loss and gradients over 'data', takes the SGD step on its blocks and returns the new
blocks split P(None, 'model') / P('model') / P('model', None), b2 and the loss replicated."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


@jax.checkpoint
def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def make(data=2, model=4):
    mesh = mesh_of(data, model)

    def inner(x, y, w1, b1, w2, b2, lr):
        params = (w1, b1, w2, b2)
        vparams = jax.lax.pcast(params, "data", to="varying") if data > 1 else params
        loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*vparams)
        if data > 1:
            loss, grads = jax.lax.pmean((loss, grads), "data")
        return (*(p - lr * g for p, g in zip(params, grads)), loss)

    inner_map = jax.shard_map(
        inner, axis_names={"model"},
        in_specs=(P(), P(), P(None, "model"), P("model"), P("model", None), P(), P()),
        out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()))

    return jax.jit(jax.shard_map(
        inner_map, mesh=mesh, axis_names={"data"},
        in_specs=(P("data"), P("data"), P(), P(), P(), P(), P()),
        out_specs=(P(), P(), P(), P(), P()), check_vma=data > 1))
