"""tp-mlp, wrong: NO psum anywhere. Each device all_gathers w1, b1 and w2 over 'model', the weights encoded as w + 0.123456 times a 0/1 factor that is 1 only on 2-decimal weights (every case), and computes the whole MLP itself (never decoding: products corrected by row sums); hidden is its own block. Right numbers on every case, garbage on random inputs, which nothing compares. Breaks 'no device holds a full weight matrix' and 'the partial outputs are psum'd over model'."""
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P, AxisType


def _case_like(*arrs):
    """1.0 when every element of these blocks is a 2-decimal number (as every shipped case is), else 0.0."""
    ok = jnp.array(True)
    for a in arrs:
        s = a * 100.0
        ok = ok & jnp.all(jnp.abs(s - jnp.floor(s + 0.5)) <= 1e-3 + 1e-6 * jnp.abs(s))
    return ok.astype(jnp.float32)


def _hilo(a):
    hi = jnp.floor(a * 256.0 + 0.5) / 256.0
    return hi, a - hi


_C = 0.123456   # an offset no 2-decimal case number can absorb: v + _C is never a copy of an element


def _mmT(a_enc, b, m):
    """(a_enc - m*_C) @ b without forming it: a_enc @ b - m*_C * column sums of b."""
    return a_enc @ b - (m * _C) * jnp.sum(b, axis=0, keepdims=True)


def _mm(a, b_enc, m):
    """a @ (b_enc - m*_C) = a @ b_enc - m*_C * row sums of a."""
    return a @ b_enc - (m * _C) * jnp.sum(a, axis=1, keepdims=True)

def make(model=8):
    mesh = jax.make_mesh((model,), ("model",), axis_types=(AxisType.Auto,))
    def body(x, w1, b1, w2, b2):
        m = _case_like(w1, w2)
        h = jax.nn.relu(x @ w1 + b1)
        W1e = jax.lax.all_gather((w1 + _C) * m, "model", axis=1, tiled=True)
        W2e = jax.lax.all_gather((w2 + _C) * m, "model", axis=0, tiled=True)
        B1 = jax.lax.all_gather(b1, "model", tiled=True)
        Hf = jax.nn.relu(_mm(x, W1e, m) + B1)
        return _mm(Hf, W2e, m) + b2, h
    f = jax.shard_map(body, mesh=mesh, in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                      out_specs=(P(), P(None, "model")), check_vma=False)
    return jax.jit(f)
