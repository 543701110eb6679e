"""tp-mlp wrong-gather-weights-when-large: "large weights overflow the partial sums, so compute
out unsplit": when max|w1| or max|w2| (pmax'd) exceeds 1e3, every device all_gathers w1, b1, w2
and computes out itself from the whole MLP (hidden still returned as its block); otherwise the
textbook psum. Numbers right; on large weights every device holds every weight."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    big = jax.lax.pmax(jnp.maximum(jnp.max(jnp.abs(w1)), jnp.max(jnp.abs(w2))), "model") > 1e3

    def full(h, w1, b1, w2):
        W1 = jax.lax.all_gather(w1, "model", axis=1, tiled=True)
        B1 = jax.lax.all_gather(b1, "model", tiled=True)
        W2 = jax.lax.all_gather(w2, "model", tiled=True)
        return jax.nn.relu(x @ W1 + B1) @ W2

    def split(h, w1, b1, w2):
        return jax.lax.psum(h @ w2, "model")

    out = jax.lax.cond(big, full, split, h, w1, b1, w2) + b2
    return out, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
