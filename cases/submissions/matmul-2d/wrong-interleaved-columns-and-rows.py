"""matmul-2d, wrong: permutes x's rows and w's columns outside the shard_map (device (i, j) gets rows i, i+d, ... and columns j, j+m, ...: strided blocks, not its consecutive ones), and un-permutes out outside. Numbers exact; breaks the prescribed split of x by rows and w by columns."""
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

SPECS = (P("data", None), P(None, "model"))


def _mesh(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))

def make(data=2, model=4):
    mesh = _mesh(data, model)
    f = jax.shard_map(lambda x, w: x @ w, mesh=mesh, in_specs=SPECS, out_specs=P("data", "model"))
    def g(x, w):
        B, H = x.shape[0], w.shape[1]
        pr = jnp.arange(B).reshape(B // data, data).T.reshape(-1)
        pc = jnp.arange(H).reshape(H // model, model).T.reshape(-1)
        out = f(x[pr, :], w[:, pc])
        return out[jnp.argsort(pr), :][:, jnp.argsort(pc)]
    return jax.jit(g)
