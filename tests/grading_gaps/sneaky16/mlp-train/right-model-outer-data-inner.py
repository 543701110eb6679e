"""mlp-train, RIGHT (nested the other way round): the outer shard_map is manual over 'model' only
(w1, b1, w2 by hidden units; x, y handed P(), the compiler's to split over 'data'); the inner one,
in its body, manual over 'data' (x, y rows, P('data')), computes the loss and its device's
gradients of the weight blocks (psum over 'model' in the forward pass -- an outer manual axis)
and pmeans them over 'data'; the outer body takes the SGD step and returns the weights split as
they came."""
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
        params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
        loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
        loss, grads = jax.lax.pmean((loss, grads), "data")
        return loss, grads

    inner_map = jax.shard_map(inner, axis_names={"data"},
                              in_specs=(P("data"), P("data"), P(), P(), P(), P()),
                              out_specs=(P(), (P(), P(), P(), P())))

    def outer(x, y, w1, b1, w2, b2, lr):
        loss, grads = inner_map(x, y, w1, b1, w2, b2)
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    return jax.jit(jax.shard_map(
        outer, mesh=mesh, axis_names={"model"},
        in_specs=(P(), P(), P(None, "model"), P("model"), P("model", None), P(), P()),
        out_specs=(P(None, "model"), P("model"), P("model", None), P(), P())))
