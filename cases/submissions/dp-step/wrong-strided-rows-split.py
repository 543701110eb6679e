"""dp-step, wrong: x and y are permuted outside the shard_map so that device d receives rows d, d+n, d+2n, ... (a strided split) instead of its consecutive rows d*N/n .. (d+1)*N/n - 1 that the statement prescribes; the arithmetic is otherwise the honest pcast/value_and_grad/pmean step, so the numbers are exactly right. Breaks 'device d receives rows d*N/8 .. (d+1)*N/8 - 1'."""
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

def _mesh(data):
    return jax.make_mesh((data,), ("data",), axis_types=(AxisType.Auto,))

def make(data=8):
    mesh = _mesh(data)
    def body(w, b, x, y, lr):
        wv, bv = jax.lax.pcast((w, b), "data", to="varying")
        def loss(w, b):
            return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
        l, (gw, gb) = jax.value_and_grad(loss, argnums=(0, 1))(wv, bv)
        l, gw, gb = jax.lax.pmean((l, gw, gb), "data")
        return w - lr * gw, b - lr * gb, l
    f = jax.shard_map(body, mesh=mesh, in_specs=(P(), P(), P("data"), P("data"), P()),
                      out_specs=(P(), P(), P()))
    def g(w, b, x, y, lr):
        n = x.shape[0]
        xs = x.reshape(n // data, data, x.shape[1]).transpose(1, 0, 2).reshape(x.shape)
        ys = y.reshape(n // data, data, y.shape[1]).transpose(1, 0, 2).reshape(y.shape)
        return f(w, b, xs, ys, lr)
    return jax.jit(g)
