"""tp-mlp, wrong: permutes w1's columns, b1 and w2's rows outside the shard_map so that device d gets hidden units d, d+n, d+2n, ... (strided) instead of its consecutive units d*H/n .. (d+1)*H/n - 1, then un-permutes hidden outside. Numbers exact; breaks 'device d holds hidden units d*H/8 .. (d+1)*H/8 - 1' (and hidden's returned block is not its own columns)."""
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

SPECS = (P(), P(None, "model"), P("model"), P("model", None), P())


def _mesh(model):
    return jax.make_mesh((model,), ("model",), axis_types=(AxisType.Auto,))

def make(model=8):
    mesh = _mesh(model)
    def body(x, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        return jax.lax.psum(h @ w2, "model") + b2, h
    f = jax.shard_map(body, mesh=mesh, in_specs=SPECS, out_specs=(P(), P(None, "model")))
    def g(x, w1, b1, w2, b2):
        H = w1.shape[1]
        perm = jnp.arange(H).reshape(H // model, model).T.reshape(-1)
        inv = jnp.argsort(perm)
        out, hid = f(x, w1[:, perm], b1[perm], w2[perm, :], b2)
        return out, hid[:, inv]
    return jax.jit(g)
