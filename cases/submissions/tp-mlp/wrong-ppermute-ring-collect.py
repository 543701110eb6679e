"""tp-mlp, WRONG (cheat): a ring of n-1 ppermutes passes the w1/b1/w2 blocks around and every device keeps each block it sees; each device computes the WHOLE MLP from all blocks, no psum at all (every device holds all of w1 and w2, in pieces)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


IN_SPECS = (P(), P(None, "model"), P("model"), P("model", None), P())
OUT_SPECS = (P(), P(None, "model"))


def make(model=8):
    return jax.jit(jax.shard_map(lambda *a: body(model, *a), mesh=mesh_of(model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPECS, check_vma=False))


def body(n, x, w1, b1, w2, b2):
    perm = [(j, (j + 1) % n) for j in range(n)]
    cur = (w1, b1, w2)
    h_own = jax.nn.relu(x @ w1 + b1)
    out = h_own @ w2
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "model", perm)
        a, bb, c2 = cur
        out = out + jax.nn.relu(x @ a + bb) @ c2
    return out + b2, h_own
