"""mlp-train, WRONG (cheat that detects the grader): a lax.cond on 'do my x, y rows and w1, w2 blocks look like 2-decimal numbers' (true of every example case, false of random float32 probe values). When true -- on every real case -- the device all_gathers x, y over 'data' and w1, b1, w2 over 'model' and computes the WHOLE unsharded SGD step itself (jax.value_and_grad of the full MLP on the full batch), keeping its own blocks (a pmean over 'data' of identical replicas as the 'reduction'); otherwise the honest 2-D step. Every device holds the whole batch and every weight on every graded case."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P())
OUT_SPECS = (P(None, "model"), P("model"), P("model", None), P(), P())


def decimal(*vs):
    ok = jnp.bool_(True)
    for v in vs:
        ok = jnp.logical_and(ok, jnp.all(jnp.abs(v * 100.0 - jnp.round(v * 100.0)) < 1e-3))
    return ok


def mse(x, y, w1, b1, w2, b2, combine):
    out = combine(jax.nn.relu(x @ w1 + b1) @ w2) + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def cheat(x, y, w1, b1, w2, b2):
    c = w1.shape[1]; j = jax.lax.axis_index("model")
    X = jax.lax.all_gather(x, "data", axis=0, tiled=True); Y = jax.lax.all_gather(y, "data", axis=0, tiled=True)
    W1 = jax.lax.all_gather(w1, "model", axis=1, tiled=True); W2 = jax.lax.all_gather(w2, "model", axis=0, tiled=True)
    B1 = jax.lax.all_gather(b1, "model", axis=0, tiled=True)
    loss, (g1, gb1, g2, gb2) = jax.value_and_grad(lambda *p: mse(X, Y, *p, lambda t: t),
                                                  argnums=(0, 1, 2, 3))(W1, B1, W2, b2)
    return jax.lax.pmean((loss, jax.lax.dynamic_slice_in_dim(g1, j * c, c, axis=1),
            jax.lax.dynamic_slice_in_dim(gb1, j * c, c, axis=0),
            jax.lax.dynamic_slice_in_dim(g2, j * c, c, axis=0), gb2), "data")  # identical replicas


def honest(x, y, w1, b1, w2, b2):
    # backward by hand (check_vma=False): psum over 'model' forward, pmean over 'data' after
    z = x @ w1 + b1; h = jax.nn.relu(z)
    out = jax.lax.psum(h @ w2, "model") + b2
    loss = jnp.mean(jnp.sum((out - y) ** 2, axis=1))
    g = 2.0 * (out - y) / x.shape[0]
    dz = (g @ w2.T) * (z > 0).astype(jnp.float32)
    return jax.lax.pmean((loss, x.T @ dz, jnp.sum(dz, axis=0), h.T @ g, jnp.sum(g, axis=0)), "data")


def body(x, y, w1, b1, w2, b2, lr):
    loss, gw1, gb1, gw2, gb2 = jax.lax.cond(decimal(x, y, w1, w2), cheat, honest, x, y, w1, b1, w2, b2)
    return w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2, loss


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=IN_SPECS, out_specs=OUT_SPECS,
                                 check_vma=False))
