"""mlp-train, RIGHT (nested; the data-parallel mean taken inside the inner map): outer shard_map
manual over 'data' only (x, y rows; the weights handed P(), the compiler's to split over 'model'),
inner one in its body manual over 'model' (w1, b1, w2 by hidden units). The inner body computes
the loss and its blocks' gradients (psum over 'model' in the forward pass) and pmeans loss and
gradients over 'data' right there (an outer manual axis, reachable from the nested body); the
inner map returns them (gradients split like the weights) and the outer body takes the SGD step."""
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


def make(data=2, model=4):
    mesh = mesh_of(data, model)

    def inner(x, y, w1, b1, w2, b2):
        params = (w1, b1, w2, b2)
        if data > 1:
            params = jax.lax.pcast(params, "data", to="varying")
        loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
        if data > 1:
            loss, grads = jax.lax.pmean((loss, grads), "data")
        return loss, grads

    inner_map = jax.shard_map(
        inner, axis_names={"model"},
        in_specs=(P(), P(), P(None, "model"), P("model"), P("model", None), P()),
        out_specs=(P(), (P(None, "model"), P("model"), P("model", None), P())))

    def outer(x, y, w1, b1, w2, b2, lr):
        loss, grads = inner_map(x, y, w1, b1, w2, b2)
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    return jax.jit(jax.shard_map(
        outer, mesh=mesh, axis_names={"data"},
        in_specs=(P("data"), P("data"), P(), P(), P(), P(), P()),
        out_specs=(P(), P(), P(), P(), P()), check_vma=data > 1))
