"""mlp-train right-cond-skip-dead-backward, a right program: the textbook split (own rows, own hidden units, psum of
partial outputs over 'model', psum of the gradients over 'data', b2 added once), but each device skips its w1/b1
backward with a lax.cond when none of its hidden units is active (relu' is 0 everywhere: the gradients are exactly 0).
Control flow on values is legal JAX and changes no number."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def make(data, model):
    mesh = Mesh(np.array(jax.devices()[:data * model]).reshape(data, model), ("data", "model"))

    def body(x, y, w1, b1, w2, b2, lr):
        z = x @ w1 + b1
        h = jnp.maximum(z, 0.0)
        out = lax.psum(h @ w2, "model") + b2
        B = x.shape[0] * data
        e = out - y
        loss = lax.psum(jnp.sum(e * e), "data") / B
        dout = 2.0 * e / B
        gw2 = h.T @ dout
        gb2 = jnp.sum(dout, axis=0)

        def back():
            dz = (dout @ w2.T) * (z > 0)
            return x.T @ dz, jnp.sum(dz, axis=0)

        def dead():
            zero = 0.0 * x[0, 0] + 0.0 * z[0, 0]
            return jnp.zeros_like(w1) + zero, jnp.zeros_like(b1) + zero

        gw1, gb1 = lax.cond(jnp.any(z > 0), back, dead)
        gw1, gb1, gw2, gb2 = lax.psum((gw1, gb1, gw2, gb2), "data")
        return w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2, loss

    return jax.jit(jax.shard_map(body, mesh=mesh,
                                 in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                                           P("model", None), P(), P()),
                                 out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()),
                                 check_vma=False))
