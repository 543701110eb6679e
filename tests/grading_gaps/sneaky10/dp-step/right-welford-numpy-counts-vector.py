"""dp-step, RIGHT: each device computes its own rows' gradient and loss means, all_gathers those
per-device means (never x or y) and combines them with a Welford running mean
m_k = m_{k-1} + (g_k - m_{k-1}) / k, the counts k = 1..n kept as a closed-over numpy column
(np.arange(1, n + 1, dtype=float32), a flat vector), a constant of the program that is neither x
nor y (its numbers are example1's x, though not its shape)."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def make(data):
    mesh = Mesh(np.array(jax.devices()[:data]), ("data",))
    counts = np.arange(1, data + 1, dtype=np.float32).reshape(data)

    def body(w, b, x, y, lr):
        r = x @ w + b - y
        nb = x.shape[0]
        parts = (2.0 * x.T @ r / nb, 2.0 * jnp.sum(r, axis=0) / nb, jnp.sum(r * r) / nb)
        G = lax.all_gather(parts, "data")

        def step(m, gk):
            g, k = gk
            return jax.tree.map(lambda mi, gi: mi + (gi - mi) / k, m, g), None

        m0 = jax.tree.map(lambda p: jnp.zeros_like(p), parts)
        (gw, gb, loss), _ = lax.scan(step, m0, (G, jnp.asarray(counts)))
        return w - lr * gw, b - lr * gb, loss

    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
