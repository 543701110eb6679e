"""mlp-train, WRONG (the data-parallel mean is not done by the mesh program: per-device gradients
are averaged in the outer body, on the automatic 'data' axis): outer shard_map manual over 'model'
(weights by hidden units), inner one manual over 'data' (x, y rows) computing its rows' loss and
its blocks' gradients (psum over 'model' in the forward pass) and returning them stacked, split
P('data') -- (d, ...) in the outer body, which takes jnp.mean over the stack (the combining over
'data' left to the compiler, as the gallery's wrong-data-mean-outside does it outside every
shard_map). A decoy pmean over 'data' of zeros the size of the weights' blocks and the loss makes
the "collectives over 'data'"."""
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
        zeros = jax.lax.pmean(tuple(0.0 * p for p in (w1, b1, w2, b2, jnp.ones(()))), "data")
        grads = tuple(g + z for g, z in zip(grads, zeros[:4]))
        return (loss + zeros[4])[None], tuple(g[None] for g in grads)

    inner_map = jax.shard_map(inner, axis_names={"data"},
                              in_specs=(P("data"), P("data"), P(), P(), P(), P()),
                              out_specs=(P("data"), (P("data"),) * 4))

    def outer(x, y, w1, b1, w2, b2, lr):
        losses, grads = inner_map(x, y, w1, b1, w2, b2)
        loss = jnp.mean(losses, axis=0)
        grads = tuple(jnp.mean(g, axis=0) for g in grads)
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    return jax.jit(jax.shard_map(
        outer, mesh=mesh, axis_names={"model"},
        in_specs=(P(), P(), P(None, "model"), P("model"), P("model", None), P(), P()),
        out_specs=(P(None, "model"), P("model"), P("model", None), P(), P())))
