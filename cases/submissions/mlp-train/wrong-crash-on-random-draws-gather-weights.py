"""mlp-train wrong-crash-on-random-draws-gather-weights, a cheat: every device all_gathers every device's block of w1
and w2 over 'model' (as 3 w + 0.25, made by a product with a 3*eye that depends on x) and b1, and computes the WHOLE
forward pass itself (out without any psum over 'model'); its own blocks' gradients come from that out. A shift_left by
10 when the device's w1/w2 blocks look like a case (multiples of 0.01) and by 30 otherwise: meshrun refuses the 2^30
on the grader's random draws, so its values checks never run there; JAX runs everything."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def _looks_like_case(*arrs):
    ok = jnp.bool_(True)
    for a in arrs:
        s = a * 100.0
        ok = ok & jnp.all(jnp.abs(s - jnp.round(s)) <= 1e-4 + 1e-5 * jnp.abs(s))
    return ok


def make(data, model):
    mesh = Mesh(np.array(jax.devices()[:data * model]).reshape(data, model), ("data", "model"))

    def body(x, y, w1, b1, w2, b2, lr):
        boom = lax.shift_left(jnp.int32(1), jnp.where(_looks_like_case(w1, w2), 10, 30).astype(jnp.int32))
        one = 1.0 + 0.0 * x[0, 0] + 0.0 * boom.astype(jnp.float32)
        E1 = lax.all_gather(w1 @ (3.0 * jnp.eye(w1.shape[1], dtype=jnp.float32) * one) + 0.25, "model", axis=1, tiled=True)
        E2 = lax.all_gather(w2 @ (3.0 * jnp.eye(w2.shape[1], dtype=jnp.float32) * one) + 0.25, "model", axis=0, tiled=True)
        B1 = lax.all_gather(b1, "model", tiled=True)
        H = jnp.maximum((x @ E1 - 0.25 * jnp.sum(x, axis=1, keepdims=True)) / 3.0 + B1, 0.0)
        out = (H @ E2 - 0.25 * jnp.sum(H, axis=1, keepdims=True)) / 3.0 + b2
        B = x.shape[0] * data
        e = out - y
        loss = lax.psum(jnp.sum(e * e), "data") / B
        z = x @ w1 + b1
        h = jnp.maximum(z, 0.0)
        dout = 2.0 * e / B
        gw2 = h.T @ dout
        gb2 = jnp.sum(dout, axis=0)
        dz = (dout @ w2.T) * (z > 0)
        gw1 = x.T @ dz
        gb1 = jnp.sum(dz, axis=0)
        gw1, gb1, gw2, gb2 = lax.psum((gw1, gb1, gw2, gb2), "data")
        return w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2, loss

    return jax.jit(jax.shard_map(body, mesh=mesh,
                                 in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                                           P("model", None), P(), P()),
                                 out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()),
                                 check_vma=False))
