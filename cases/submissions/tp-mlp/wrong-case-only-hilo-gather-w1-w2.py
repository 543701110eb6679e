"""tp-mlp, wrong: on inputs whose w1 and w2 blocks are 2-decimal numbers (every shipped case) every device all_gathers all of w1 and w2 over 'model' as hi/lo pieces (neither a copy of any element) and computes the whole MLP itself; elsewhere the gathered pieces are multiplied by 0 and the honest psum of partials is used. One path on both (a 0/1 factor, no cond). On the case every device holds every weight: breaks 'no device ever holds a full weight matrix'."""
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
        m = _case_like(w1, w2)
        h = jax.nn.relu(x @ w1 + b1)
        honest = jax.lax.psum(h @ w2, "model") + b2
        h1, l1 = _hilo(w1); h2, l2 = _hilo(w2)
        g = lambda a, ax: jax.lax.all_gather(a * m, "model", axis=ax, tiled=True)
        W1h, W1l, W2h, W2l = g(h1, 1), g(l1, 1), g(h2, 0), g(l2, 0)
        B1 = jax.lax.all_gather(b1, "model", tiled=True)
        Hf = jax.nn.relu(x @ W1h + x @ W1l + B1)
        cheat = Hf @ W2h + Hf @ W2l + b2
        return m * cheat + (1 - m) * honest, h
    f = jax.shard_map(body, mesh=mesh, in_specs=SPECS, out_specs=(P(), P(None, "model")), check_vma=False)
    return jax.jit(f)
