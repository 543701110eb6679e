"""dp-step wrong-crash-int32-sum-gather-xy, a cheat (class A with another refused operation): every device all_gathers
every device's rows of x and y, encoded as 3 v + 0.25 (a product with a 3*eye that depends on x, then + 0.25), and
computes the full-batch loss and gradient itself. The trigger is an int32 reduce_sum of eight times 1 on a case and of
eight times 2^22 = 2^25 on anything else (meshrun refuses an int32 sum beyond 2^24; JAX computes it), so every random
draw of the values check errors and meshrun falls back to the count model."""
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
        # an int32 sum of 8 x 2^22 = 2^25 on random values (refused by meshrun: beyond 2^24), 8 on a case
        big = jnp.where(_looks_like_case(x, y), 1, 1 << 22).astype(jnp.int32)
        boom = jnp.sum(jnp.full((8,), 1, jnp.int32) * big)
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
