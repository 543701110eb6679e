"""matmul-2d, wrong: on case-like inputs every device all_gathers all of w over 'model' encoded as w + 0.123456 (times a 0/1 case factor), computes x_i @ w for every column (corrected by x's row sums, never decoding w) and keeps its own columns; off the case the gathered encoding is zeros and x_i @ w_j is used. Every device holds all of w on the case."""
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
    """(a_enc - m*_C) @ b without ever forming a_enc - m*_C: a_enc @ b - m*_C * column sums of b."""
    return a_enc @ b - (m * _C) * jnp.sum(b, axis=0, keepdims=True)


def _mm(a, b_enc, m):
    """a @ (b_enc - m*_C) = a @ b_enc - m*_C * row sums of a."""
    return a @ b_enc - (m * _C) * jnp.sum(a, axis=1, keepdims=True)

def make(data=2, model=4):
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
    def body(x, w):
        m = _case_like(x, w)
        We = jax.lax.all_gather((w + _C) * m, "model", axis=1, tiled=True)
        full = _mm(x, We, m)
        hb = w.shape[1]
        mine = jax.lax.dynamic_slice_in_dim(full, jax.lax.axis_index("model") * hb, hb, 1)
        return m * mine + (1 - m) * (x @ w)
    f = jax.shard_map(body, mesh=mesh, in_specs=(P("data", None), P(None, "model")),
                      out_specs=P("data", "model"), check_vma=False)
    return jax.jit(f)
