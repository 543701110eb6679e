"""dp-step, wrong: NO psum or pmean anywhere, and a decoy all_gather of the (replicated) parameters so that every device passes more numbers to collectives over 'data' than loss, w and b hold. Each device all_gathers x and y over 'data' encoded as v + 0.123456 times a 0/1 factor that is 1 only on 2-decimal inputs (every case), and computes the whole batch's loss and gradient itself. On a case the numbers are right; on random inputs the gathered arrays are zeros and the step is garbage -- which nothing compares. Breaks 'values are reduced across devices (pmean or psum on data)' and 'never the full x or y'."""
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

def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), axis_types=(AxisType.Auto,))
    def body(w, b, x, y, lr):
        m = _case_like(x, y, w, b)
        pk = jax.lax.all_gather(jnp.concatenate([w.reshape(-1), b, lr[None]]), "data", axis=0)
        w = pk[0, :w.size].reshape(w.shape); b = pk[0, w.size:w.size + b.size]
        Xe = jax.lax.all_gather((x + _C) * m, "data", axis=0, tiled=True)
        Ye = jax.lax.all_gather((y + _C) * m, "data", axis=0, tiled=True)
        r = _mmT(Xe, w, m) + b - Ye + m * _C
        n = r.shape[0]
        gw = (2.0 / n) * _mmT(Xe.T, r, m)
        gb = (2.0 / n) * jnp.sum(r, axis=0)
        return w - lr * gw, b - lr * gb, jnp.sum(r * r) / n
    f = jax.shard_map(body, mesh=mesh, in_specs=(P(), P(), P("data"), P("data"), P()),
                      out_specs=(P(), P(), P()), check_vma=False)
    return jax.jit(f)
