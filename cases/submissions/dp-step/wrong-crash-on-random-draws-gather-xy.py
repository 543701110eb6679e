"""dp-step wrong-crash-on-random-draws-gather-xy, a cheat: every device all_gathers every device's rows of x and y,
encoded as 3 v + 0.25 (a product with a 3*eye that depends on x, then + 0.25), and computes the full-batch loss and
gradient itself (a pmean of the identical results as the 'reduction'). A shift_left by 10 when the device's block looks
like a case (every number a multiple of 0.01) and by 30 otherwise -- meshrun refuses the 2^30 result, so every random
draw of the values check errors and meshrun falls back; JAX runs the program on anything."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def _looks_like_case(*arrs):
    ok = jnp.bool_(True)
    for a in arrs:
        s = a * 100.0
        ok = ok & jnp.all(jnp.abs(s - jnp.round(s)) <= 1e-4 + 1e-5 * jnp.abs(s))
    return ok


def make(data):
    mesh = Mesh(np.array(jax.devices()[:data]), ("data",))

    def body(w, b, x, y, lr):
        boom = lax.shift_left(jnp.int32(1), jnp.where(_looks_like_case(x, y), 10, 30).astype(jnp.int32))
        one = 1.0 + 0.0 * x[0, 0] + 0.0 * boom.astype(jnp.float32)
        X = lax.all_gather(x @ (3.0 * jnp.eye(x.shape[1], dtype=jnp.float32) * one) + 0.25, "data", axis=0, tiled=True)
        Y = lax.all_gather(y @ (3.0 * jnp.eye(y.shape[1], dtype=jnp.float32) * one) + 0.25, "data", axis=0, tiled=True)
        N = X.shape[0]
        r = ((X @ w - Y) - (0.25 * jnp.sum(w, axis=0) - 0.25)) / 3.0 + b
        loss = jnp.sum(r * r) / N
        gw = 2.0 * (X.T @ r - 0.25 * jnp.sum(r, axis=0)) / 3.0 / N
        gb = 2.0 * jnp.sum(r, axis=0) / N
        gw, gb, loss = lax.pmean((gw, gb, loss), "data")
        return w - lr * gw, b - lr * gb, loss

    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
