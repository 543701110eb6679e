"""mlp-train wrong-data-mean-fma-outside: forward/backward right on each device (pcast over 'data',
psum over 'model'), a decoy pmean of zeros over 'data'; each data row's loss and gradients are
returned stacked along a leading 'data' axis and averaged OUTSIDE as a chain
acc = g_k * (1/d) + acc (FMA links); the SGD step is applied outside. The mean over 'data' is never
done on the mesh."""
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


def body(x, y, w1, b1, w2, b2):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    z = jax.lax.pmean(jax.tree.map(lambda g: 0.0 * g, (loss, grads)), "data")
    z = jax.lax.pcast(z, "data", to="varying")
    loss = loss + z[0]
    grads = tuple(g + zz for g, zz in zip(grads, z[1]))
    return (loss[None], *(g[None] for g in grads))


def make(data=2, model=4):
    inner = jax.shard_map(body, mesh=mesh_of(data, model),
                          in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                                    P("model", None), P()),
                          out_specs=(P("data"), P("data", None, "model"), P("data", "model"),
                                     P("data", "model", None), P("data", None)))
    s = 1.0 / data

    def prog(x, y, w1, b1, w2, b2, lr):
        stacked = inner(x, y, w1, b1, w2, b2)
        means = []
        for a in stacked:
            acc = a[0] * s
            for k in range(1, data):
                acc = a[k] * s + acc
            means.append(acc)
        loss, g1, gb1, g2, gb2 = means
        return w1 - lr * g1, b1 - lr * gb1, w2 - lr * g2, b2 - lr * gb2, loss
    return jax.jit(prog)
