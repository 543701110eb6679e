"""mlp-train, WRONG: two nested shard_maps, the outer one manual over 'data' only, the inner one
manual over 'model' -- but the whole forward and backward pass runs in the outer body, where
'model' is automatic and w1, b1, w2 are held whole: no tensor parallelism is written. The inner
shard_map is a decoy: it psums over 'model' a block of the loss's zeros, so a collective over
'model' happens. Right numbers (the pmean over 'data' is the textbook one)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def loss_fn(params, x, y):
    w1, b1, w2, b2 = params
    h = jax.nn.relu(x @ w1 + b1)
    out = h @ w2 + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    decoy = jax.shard_map(lambda z: jax.lax.psum(z, "model"), axis_names={"model"},
                          in_specs=P("model"), out_specs=P())

    def outer(x, y, w1, b1, w2, b2, lr):
        params = (w1, b1, w2, b2)
        if data > 1:  # (each 'data' device's own gradient, averaged below)
            params = jax.lax.pcast(params, "data", to="varying")
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        loss = loss + decoy(jnp.zeros((model,), jnp.float32))[0]
        if data > 1:
            loss, grads = jax.lax.pmean((loss, grads), "data")
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    outer_map = jax.shard_map(
        outer, mesh=mesh, axis_names={"data"},
        in_specs=(P("data"), P("data"), P(), P(), P(), P(), P()),
        out_specs=(P(), P(), P(), P(), P()), check_vma=data > 1)
    return jax.jit(outer_map)
