"""mlp-train, WRONG: forward/backward legitimately split (own rows, own hidden units, psum of the
partial outputs over 'model', b2 once), but the mean over 'data' is NOT done on the mesh: on 4+
data devices the loss and gradients are averaged only inside pairs (one ppermute swap), on fewer
not at all; a decoy psum over 'data' of 0 * (loss, grads) passes a full set of numbers to a
collective; the per-device (or per-pair) results come out stacked over 'data' and are averaged
OUTSIDE the shard_map, where the update is done too."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    d = data
    groups = [[i, i + 1] for i in range(0, d, 2)] if d >= 4 else None

    def loss_fn(x, y, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        out = jax.lax.psum(h @ w2, "model") + b2
        return jnp.mean(jnp.sum((out - y) ** 2, axis=1))

    def body(x, y, w1, b1, w2, b2):
        params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
        loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
        vals = (loss, *grads)
        if groups is not None:
            swap = [(i, i ^ 1) for i in range(d)]
            vals = tuple((v + jax.lax.ppermute(v, "data", swap)) / 2 for v in vals)
        decoy = jax.lax.psum(tuple(0.0 * v for v in vals), "data")
        vals = tuple(v + z for v, z in zip(vals, decoy))
        return tuple(v[None] for v in vals)

    sm = jax.shard_map(body, mesh=mesh_of(d, model),
                       in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                                 P("model", None), P()),
                       out_specs=(P("data"), P("data", None, "model"), P("data", "model"),
                                  P("data", "model", None), P("data")),
                       )

    def f(x, y, w1, b1, w2, b2, lr):
        loss, g1, gb1, g2, gb2 = sm(x, y, w1, b1, w2, b2)
        k = 2 if groups is not None else 1
        m = lambda a: jnp.mean(a[::k], axis=0)
        return (w1 - lr * m(g1), b1 - lr * m(gb1), w2 - lr * m(g2), b2 - lr * m(gb2), m(loss))
    return jax.jit(f)
