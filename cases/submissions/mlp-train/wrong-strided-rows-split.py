"""mlp-train, wrong: permutes x and y outside the shard_map so data-row i receives rows i, i+d, i+2d, ... (strided) instead of its consecutive rows; the step itself is the honest one, so the numbers are right. Breaks 'every device received only its block of x, y (rows over data)'."""
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

SPECS = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P())
OUT = (P(None, "model"), P("model"), P("model", None), P(), P())


def _mesh(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def _backward(x, y, w1, b1, w2, b2, z, h, out, relu_ge=False):
    bd = x.shape[0]
    L = jnp.sum((out - y) ** 2) / bd
    g = 2.0 * (out - y) / bd
    dw2 = h.T @ g
    db2 = jnp.sum(g, axis=0)
    mask = (z >= 0) if relu_ge else (z > 0)
    dz = (g @ w2.T) * mask.astype(jnp.float32)
    return L, x.T @ dz, jnp.sum(dz, axis=0), dw2, db2

def make(data=2, model=4):
    mesh = _mesh(data, model)
    def body(x, y, w1, b1, w2, b2, lr):
        z = x @ w1 + b1
        h = jax.nn.relu(z)
        out = jax.lax.psum(h @ w2, "model") + b2
        L, dw1, db1, dw2, db2 = jax.lax.pmean(_backward(x, y, w1, b1, w2, b2, z, h, out), "data")
        return w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2, L
    f = jax.shard_map(body, mesh=mesh, in_specs=SPECS, out_specs=OUT)
    def g(x, y, w1, b1, w2, b2, lr):
        n = x.shape[0]
        xs = x.reshape(n // data, data, x.shape[1]).transpose(1, 0, 2).reshape(x.shape)
        ys = y.reshape(n // data, data, y.shape[1]).transpose(1, 0, 2).reshape(y.shape)
        return f(xs, ys, w1, b1, w2, b2, lr)
    return jax.jit(g)
