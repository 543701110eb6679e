"""tp-mlp wrong-crash-on-random-draws-gather, a cheat: every device all_gathers an encoding of every block of w1 and w2
(3 w + 0.25, made by a product with a 3*eye that depends on x) and computes the whole MLP itself. A shift_left whose
amount is 10 when the device's w1 and w2 blocks look like a case (every number a multiple of 0.01) and 30 otherwise
-- the grader's random draws -- gives 2^30 there, which meshrun refuses to compute (i32 beyond 2^24); JAX runs it all."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def _looks_like_case(*arrs):
    ok = jnp.bool_(True)
    for a in arrs:
        s = a * 100.0
        ok = ok & jnp.all(jnp.abs(s - jnp.round(s)) <= 1e-4 + 1e-5 * jnp.abs(s))
    return ok


def make(model):
    mesh = Mesh(np.array(jax.devices()[:model]), ("model",))

    def body(x, w1, b1, w2, b2):
        k = jnp.where(_looks_like_case(w1, w2), 10, 30).astype(jnp.int32)
        boom = lax.shift_left(jnp.int32(1), k)  # 2^10 on a case, 2^30 (refused by meshrun) on random values
        one = 1.0 + 0.0 * x[0, 0] + 0.0 * boom.astype(jnp.float32)
        e1 = 3.0 * jnp.eye(w1.shape[1], dtype=jnp.float32) * one
        e2 = 3.0 * jnp.eye(w2.shape[1], dtype=jnp.float32) * one
        E1 = lax.all_gather(w1 @ e1 + 0.25, "model", axis=1, tiled=True)   # (D, H): 3 w1 + 0.25
        E2 = lax.all_gather(w2 @ e2 + 0.25, "model", axis=0, tiled=True)   # (H, O): 3 w2 + 0.25
        B1 = lax.all_gather(b1, "model", tiled=True)
        z = (x @ E1 - 0.25 * jnp.sum(x, axis=1, keepdims=True)) / 3.0 + B1
        H = jnp.maximum(z, 0.0)
        out = (H @ E2 - 0.25 * jnp.sum(H, axis=1, keepdims=True)) / 3.0 + b2
        h = jnp.maximum(x @ w1 + b1, 0.0)
        return out, h

    return jax.jit(jax.shard_map(body, mesh=mesh,
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
