"""mlp-train, RIGHT: two nested shard_maps -- the outer one manual over 'data' only
(axis_names={'data'}: x and y split by rows, 'model' left to the compiler), the inner one, in the
outer's body, manual over 'model' (w1, b1, w2 split by hidden units). The inner body computes the
loss and the gradients of its device's blocks (the partial outputs psum'd over 'model'); the
outer body pmeans the loss and the gradients over 'data' and takes the step. Every device holds
only its blocks; the collectives are the textbook ones (one psum over 'model' in the forward
pass, one over it in the backward for x's cotangent -- not needed here -- and one pmean over
'data'), only written as the two levels of parallelism they are."""
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
        return jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)

    inner_map = jax.shard_map(
        inner, axis_names={"model"},  # the context mesh (the outer body's)
        in_specs=(P(), P(), P(None, "model"), P("model"), P("model", None), P()),
        out_specs=(P(), (P(None, "model"), P("model"), P("model", None), P())))

    def outer(x, y, w1, b1, w2, b2, lr):
        loss, grads = inner_map(x, y, w1, b1, w2, b2)
        if data > 1:  # (on a 'data' axis of one device there is nothing to average, and
            # XLA's partitioner refuses an all-reduce over a manual axis of one device)
            loss, grads = jax.lax.pmean((loss, grads), "data")
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    outer_map = jax.shard_map(
        outer, mesh=mesh, axis_names={"data"},
        in_specs=(P("data"), P("data"), P(), P(), P(), P(), P()),
        out_specs=(P(), P(), P(), P(), P()),
        check_vma=data > 1)  # one 'data' device: the loss is trivially the same on every one

    return jax.jit(outer_map)
