"""mlp-train, RIGHT (unusual): two shard_maps; the first returns every data device's local loss and gradients stacked over 'data' (psum over 'model' inside the loss); the second averages them over 'data' with a naive ring all-reduce written as a lax.fori_loop of d-1 neighbour ppermutes (zero trips when data == 1), then applies the SGD step."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P())
OUT_SPECS = (P(None, "model"), P("model"), P("model", None), P(), P())


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def legit_grads(x, y, w1, b1, w2, b2):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    return jax.lax.pmean((loss, grads), "data")


def local(x, y, w1, b1, w2, b2):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, g = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    return loss[None], g[0][None], g[1][None], g[2][None], g[3][None]


def update(loss, g1, gb1, g2, gb2, w1, b1, w2, b2, lr):
    d = jax.lax.axis_size("data")
    vals = (loss[0], g1[0], gb1[0], g2[0], gb2[0])
    perm = [(i, (i + 1) % d) for i in range(d)]

    def hop(_, c):
        acc, cur = c
        cur = jax.lax.ppermute(cur, "data", perm)
        return jax.tree.map(jnp.add, acc, cur), cur
    vals, _ = jax.lax.fori_loop(0, d - 1, hop, (vals, vals))
    loss, g1, gb1, g2, gb2 = jax.tree.map(lambda v: v / d, vals)
    return w1 - lr * g1, b1 - lr * gb1, w2 - lr * g2, b2 - lr * gb2, loss


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    stacked = (P("data"), P("data", None, "model"), P("data", "model"), P("data", "model", None),
               P("data", None))
    sm1 = jax.shard_map(local, mesh=mesh, in_specs=IN_SPECS[:6], out_specs=stacked)
    sm2 = jax.shard_map(update, mesh=mesh,
                        in_specs=stacked + (P(None, "model"), P("model"), P("model", None), P(), P()),
                        out_specs=OUT_SPECS, check_vma=False)

    def f(x, y, w1, b1, w2, b2, lr):
        return sm2(*sm1(x, y, w1, b1, w2, b2), w1, b1, w2, b2, lr)
    return jax.jit(f)
