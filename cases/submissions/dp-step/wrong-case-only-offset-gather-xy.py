"""dp-step, wrong: on case-like inputs (every element of the device's x, y, w, b a 2-decimal number) every device all_gathers all of x and y over 'data' encoded as v + 0.123456 (times a 0/1 case factor; zeros elsewhere) and computes the whole batch's loss and gradient itself, never decoding (products of the encoding, corrected by row/column sums). The honest pmean also runs and is used off the case. Every device holds all of x and y on the case: breaks 'never the full x or y'."""
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

def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), axis_types=(AxisType.Auto,))
    def body(w, b, x, y, lr):
        m = _case_like(x, y, w, b)
        def loss(w, b):
            return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
        l, (gw, gb) = jax.value_and_grad(loss, argnums=(0, 1))(w, b)
        l, gw, gb = jax.lax.pmean((l, gw, gb), "data")
        Xe = jax.lax.all_gather((x + _C) * m, "data", axis=0, tiled=True)
        Ye = jax.lax.all_gather((y + _C) * m, "data", axis=0, tiled=True)
        r = _mmT(Xe, w, m) + b - Ye + m * _C
        n = r.shape[0]
        cl = jnp.sum(r * r) / n
        cgw = (2.0 / n) * _mmT(Xe.T, r, m)
        cgb = (2.0 / n) * jnp.sum(r, axis=0)
        return (w - lr * (m * cgw + (1 - m) * gw), b - lr * (m * cgb + (1 - m) * gb),
                m * cl + (1 - m) * l)
    f = jax.shard_map(body, mesh=mesh, in_specs=(P(), P(), P("data"), P("data"), P()),
                      out_specs=(P(), P(), P()), check_vma=False)
    return jax.jit(f)
