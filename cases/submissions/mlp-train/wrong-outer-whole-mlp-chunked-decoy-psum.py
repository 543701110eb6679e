"""mlp-train, WRONG (no tensor parallelism at all: every device holds and computes with all of
w1, b1, w2): an outer shard_map manual over 'data' only hands each device its rows of x, y and
ALL of w1, b1, w2, b2 (P()). In the outer body the weights are pinned replicated over 'model'
(with_sharding_constraint(., P()): every device holds all of them) and the whole MLP's loss and
gradients are computed on them by every device, the hidden units in `model` chunks (static slices
of w1, b1, w2; no product or reduction has an operand that holds all of a weight). The gradients
are pmean'd over 'data' (the data-parallel part is right). A decoy inner shard_map manual over
'model' psums 0 * b1's block over 'model' (the "collective over 'model'") and its result is
added to the loss times 0. The compiled executable all-gathers w1, w2 onto every device."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    decoy = jax.shard_map(lambda b1: jax.lax.psum(jnp.sum(b1 * 0.0), "model"),
                          axis_names={"model"}, in_specs=P("model"), out_specs=P())

    def loss_fn(x, y, w1, b1, w2, b2):
        H = w1.shape[1]
        q = H // model
        out = b2
        for i in range(model):
            s = slice(i * q, (i + 1) * q)
            h = jax.nn.relu(x @ w1[:, s] + b1[s])
            out = out + h @ w2[s, :]
        return jnp.mean(jnp.sum((out - y) ** 2, axis=1))

    def outer(x, y, w1, b1, w2, b2, lr):
        params = jax.lax.with_sharding_constraint((w1, b1, w2, b2), (P(), P(), P(), P()))
        if data > 1:
            params = jax.lax.pcast(params, "data", to="varying")
        loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
        if data > 1:
            loss, grads = jax.lax.pmean((loss, grads), "data")
        loss = loss + 0.0 * decoy(b1)
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    return jax.jit(jax.shard_map(
        outer, mesh=mesh, axis_names={"data"},
        in_specs=(P("data"), P("data"), P(), P(), P(), P(), P()),
        out_specs=(P(), P(), P(), P(), P()), check_vma=data > 1))
