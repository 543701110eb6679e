"""mlp-train wrong-workers-clip-grads: one shard_map (check_vma=False): value_and_grad of the
TP loss (the psum's transpose, a psum under check_vma=False, scales the first-layer and w2
gradients by the model size, divided back), pmean over 'data'; data index 0 applies the update as
it is, the other data rows with every gradient clipped elementwise at 1e3. No case's gradient
comes near 1e3, so replicas agree on every case; on large inputs the parameters' replicas differ
across 'data' (JAX keeps data index 0's)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


SPECS = dict(in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                       P("model", None), P(), P()),
             out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()))


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2, lr):
    m = jax.lax.psum(1.0, "model")
    loss, (g1, gb1, g2, gb2) = jax.value_and_grad(lambda *p: loss_fn(x, y, *p),
                                                  argnums=(0, 1, 2, 3))(w1, b1, w2, b2)
    grads = (g1 / m, gb1 / m, g2 / m, gb2)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    lead = jax.lax.axis_index("data") == 0
    grads = [jnp.where(lead, g, jnp.clip(g, -1e3, 1e3)) for g in grads]
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), check_vma=False, **SPECS))
