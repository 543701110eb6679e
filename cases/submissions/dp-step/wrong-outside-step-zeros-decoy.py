"""dp-step, WRONG (cheat, the work outside the mesh; variant of wrong-outside-step-from-laundered-blocks with a different decoy): the body hands back its own x and y blocks multiplied by an identity matrix scaled by (1 + 0 * x[0, 0]) (numerically the blocks themselves), stacked over 'data', plus a pmean over 'data' of zeros of the size of (loss, w, b) (0 * the local gradient); OUTSIDE the shard_map the whole batch is reassembled and the full-batch loss, gradient and update are computed on one device. The pmean of zeros is added to the result (it is 0)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y):
    one = 1.0 + 0.0 * x[0, 0]
    e = jnp.eye(x.shape[0], dtype=jnp.float32) * one
    zl, (zw, zb) = jax.value_and_grad(lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1)),
                                      argnums=(0, 1))(w, b)
    zl, zw, zb = jax.lax.pmean((0.0 * zl, 0.0 * zw, 0.0 * zb), "data")
    return (e @ x)[None], (e @ y)[None], zl, zw, zb


def make(data=8):
    sm = jax.shard_map(body, mesh=mesh_of(data), in_specs=(P(), P(), P("data"), P("data")),
                       out_specs=(P("data"), P("data"), P(), P(), P()), check_vma=False)

    def f(w, b, x, y, lr):
        xs, ys, zl, zw, zb = sm(w, b, x, y)
        X = xs.reshape(-1, xs.shape[-1]); Y = ys.reshape(-1, ys.shape[-1])
        loss, (gw, gb) = jax.value_and_grad(lambda w, b: jnp.mean(jnp.sum((X @ w + b - Y) ** 2, axis=1)),
                                            argnums=(0, 1))(w, b)
        return w - lr * gw + zw, b - lr * gb + zb, loss + zl
    return jax.jit(f)
