"""mlp-train, wrong: on case-like inputs (2-decimal w1 and w2 blocks) every device all_gathers all of w1 and w2 over 'model' encoded as w + 0.123456 (times a 0/1 case factor) and computes the whole forward pass itself (products of the encodings corrected by row sums; no psum of partials needed); off the case the encodings are zeros and the honest psum is used. Every device holds both weight matrices on the case."""
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

SPECS = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P())
OUT = (P(None, "model"), P("model"), P("model", None), P(), P())


def _mesh(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def _backward(x, y, w2, z, h, out):
    bd = x.shape[0]
    L = jnp.sum((out - y) ** 2) / bd
    g = 2.0 * (out - y) / bd
    dz = (g @ w2.T) * (z > 0).astype(jnp.float32)
    return L, x.T @ dz, jnp.sum(dz, axis=0), h.T @ g, jnp.sum(g, axis=0)

def make(data=2, model=4):
    mesh = _mesh(data, model)
    def body(x, y, w1, b1, w2, b2, lr):
        m = _case_like(w1, w2)
        z = x @ w1 + b1
        h = jax.nn.relu(z)
        honest = jax.lax.psum(h @ w2, "model") + b2
        W1e = jax.lax.all_gather((w1 + _C) * m, "model", axis=1, tiled=True)
        W2e = jax.lax.all_gather((w2 + _C) * m, "model", axis=0, tiled=True)
        B1 = jax.lax.all_gather(b1, "model", tiled=True)
        Hf = jax.nn.relu(_mm(x, W1e, m) + B1)
        out = m * (_mm(Hf, W2e, m) + b2) + (1 - m) * honest
        L, dw1, db1, dw2, db2 = jax.lax.pmean(_backward(x, y, w2, z, h, out), "data")
        return w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2, L
    f = jax.shard_map(body, mesh=mesh, in_specs=SPECS, out_specs=OUT, check_vma=False)
    return jax.jit(f)
