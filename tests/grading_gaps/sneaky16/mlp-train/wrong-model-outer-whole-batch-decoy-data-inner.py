"""mlp-train, WRONG (no data parallelism: every device holds all of x and y and computes the loss
and gradients of the whole batch): the nesting swapped -- the outer shard_map is manual over
'model' only (w1, b1, w2 split by hidden units, the right TP psum over 'model' in the forward
pass), x and y handed P() and pinned replicated over 'data' (with_sharding_constraint(., P())).
The outer body computes the full-batch loss and gradients itself, the batch in `data` chunks of
rows (static slices of x, y: no product or reduction has an operand holding all of x or y), sums
the chunks' losses and divides by B. A decoy inner shard_map manual over 'data' takes x's rows
and pmeans zeros the size of the weights and the loss over 'data' (the "combining over 'data'"), added to the
gradients. Every device computes on the whole batch; the compiled executable gives every device
all of x and y."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)

    def decoy_body(x, w1, b1, w2, b2):
        z = tuple(0.0 * jnp.sum(x) * p for p in (w1, b1, w2, b2, jnp.ones(())))
        return jax.lax.pmean(z, "data") if data > 1 else z

    decoy = jax.shard_map(decoy_body, axis_names={"data"},
                          in_specs=(P("data"), P(), P(), P(), P()), out_specs=P(),
                          check_vma=False)

    def loss_fn(x, y, w1, b1, w2, b2):
        B = x.shape[0]
        r = B // data
        total = 0.0
        for i in range(data):
            s = slice(i * r, (i + 1) * r)
            h = jax.nn.relu(x[s] @ w1 + b1)
            out = jax.lax.psum(h @ w2, "model") + b2
            total = total + jnp.sum((out - y[s]) ** 2)
        return total / B

    def outer(x, y, w1, b1, w2, b2, lr):
        x, y = jax.lax.with_sharding_constraint((x, y), (P(), P()))
        loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(
            w1, b1, w2, b2)
        *z, zl = decoy(x, w1, b1, w2, b2)  # the weights as handed in: not derived from x
        grads = tuple(g + d for g, d in zip(grads, z))
        loss = loss + zl
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    return jax.jit(jax.shard_map(
        outer, mesh=mesh, axis_names={"model"},
        in_specs=(P(), P(), P(None, "model"), P("model"), P("model", None), P(), P()),
        out_specs=(P(None, "model"), P("model"), P("model", None), P(), P())))
