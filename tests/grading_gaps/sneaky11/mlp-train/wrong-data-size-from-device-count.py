"""mlp-train, WRONG (right only on meshes that use every device): the gradients are psum'd over 'data' and
divided by "the number of data replicas", computed as len(jax.devices()) // model -- the host's device
count instead of the mesh's 'data' size. Every graded mesh (2x4, 1x8, 4x2, 8x1) uses all 8 devices, so
it equals d there; make(data=2, model=2) (or 1x4, 2x1 ...) on the same 8-device host divides by 4 and
steps 2x too far (ditto the loss)."""
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
    replicas = len(jax.devices()) // model

    def body(x, y, w1, b1, w2, b2, lr):
        params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
        loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
        loss, grads = jax.tree.map(lambda t: jax.lax.psum(t, "data") / replicas, (loss, grads))
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
        in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P()),
        out_specs=(P(None, "model"), P("model"), P("model", None), P(), P())))
