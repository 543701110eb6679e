"""mlp-train, WRONG (b2 updated on model device 0 only; the other copies of b2 go stale): the
right nested program (outer shard_map manual over 'data', inner one over 'model', psum over
'model', pmean over 'data' in the outer body), except that b2's gradient goes through a second
nested map manual over 'model' that keeps it on 'model' device 0 and returns zeros elsewhere,
under out_specs P() with check_vma=False (JAX trusts it is replicated). Every device with model index > 0 ends the step
with the old b2: the replicated b2 the program returns differs between devices (JAX's
np.asarray shows device 0's, right; the next step from any other device's copy is wrong) -- the
gallery's wrong-b2-updated-on-model-rank0-only, one level down."""
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
        inner, axis_names={"model"},
        in_specs=(P(), P(), P(None, "model"), P("model"), P("model", None), P()),
        out_specs=(P(), (P(None, "model"), P("model"), P("model", None), P())))
    # the "parameter server": b2's gradient kept on model device 0 only
    server = jax.shard_map(
        lambda g: jnp.where(jax.lax.axis_index("model") == 0, g, jnp.zeros_like(g)),
        axis_names={"model"}, in_specs=P(), out_specs=P(), check_vma=False)

    def outer(x, y, w1, b1, w2, b2, lr):
        loss, grads = inner_map(x, y, w1, b1, w2, b2)
        grads = (grads[0], grads[1], grads[2], server(grads[3]))
        if data > 1:
            loss, grads = jax.lax.pmean((loss, grads), "data")
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    return jax.jit(jax.shard_map(
        outer, mesh=mesh, axis_names={"data"},
        in_specs=(P("data"), P("data"), P(), P(), P(), P(), P()),
        out_specs=(P(), P(), P(), P(), P()), check_vma=data > 1))
