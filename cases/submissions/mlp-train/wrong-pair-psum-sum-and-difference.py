"""mlp-train wrong-pair-psum-sum-and-difference, a cheat: 'model' devices are paired (0,1), (2,3), ... with
axis_index_groups; two psums in each pair hand every device S = W_a + W_b and T = W_a - W_b of the stacked block
W = [w1; b1; w2^T] (every number a mixture of two devices' elements), from which each device computes BOTH its own
and its partner's hidden units' partial outputs ((S +- T)/2 products, never decoding a weight) and the pair's sum of
them; the psum over 'model' then adds only the pair leaders' values. Each device holds its partner's block (as sum and
difference) and does its forward work. Backward is its own block's. On model = 1 it is the plain program."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def make(data, model):
    mesh = Mesh(np.array(jax.devices()[:data * model]).reshape(data, model), ("data", "model"))
    groups = [[2 * i, 2 * i + 1] for i in range(model // 2)]

    def body(x, y, w1, b1, w2, b2, lr):
        z = x @ w1 + b1
        h = jnp.maximum(z, 0.0)
        if model % 2:
            out = lax.psum(h @ w2, "model") + b2
        else:
            me = lax.axis_index("model")
            sign = jnp.where(me % 2 == 0, 1.0, -1.0)
            Wst = jnp.concatenate([w1, b1[None, :], w2.T], axis=0)           # (D + 1 + O, Hb)
            S = lax.psum(Wst, "model", axis_index_groups=groups)
            T = lax.psum(sign * Wst, "model", axis_index_groups=groups)
            D = x.shape[1]
            xb = jnp.concatenate([x, jnp.ones((x.shape[0], 1), jnp.float32)], axis=1)
            # pre-activations of unit block a (= (S+T)/2) and b (= (S-T)/2), by products only
            zs, zt = xb @ S[: D + 1], xb @ T[: D + 1]
            ha, hb = jnp.maximum((zs + zt) * 0.5, 0.0), jnp.maximum((zs - zt) * 0.5, 0.0)
            # partial outputs: h_a w2_a + h_b w2_b = ((ha+hb) S2 + (ha-hb) T2)/2
            S2, T2 = S[D + 1:].T, T[D + 1:].T
            pair = ((ha + hb) @ S2 + (ha - hb) @ T2) * 0.5
            out = lax.psum(jnp.where(me % 2 == 0, pair, 0.0), "model") + b2
        B = x.shape[0] * data
        e = out - y
        loss = lax.psum(jnp.sum(e * e), "data") / B
        dout = 2.0 * e / B
        gw2 = h.T @ dout
        gb2 = jnp.sum(dout, axis=0)
        dz = (dout @ w2.T) * (z > 0)
        gw1, gb1, gw2, gb2 = lax.psum((x.T @ dz, jnp.sum(dz, axis=0), gw2, gb2), "data")
        return w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2, loss

    return jax.jit(jax.shard_map(body, mesh=mesh,
                                 in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                                           P("model", None), P(), P()),
                                 out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()),
                                 check_vma=False))
