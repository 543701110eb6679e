"""dp-step wrong-freeze-constant-features: textbook pmean step, but a feature (column of x) that
is constant over the whole batch (pmax == pmin over 'data') is taken to be "collinear with the
bias": its weight row is frozen (gradient zeroed). For a zero column that is exact (x^T r = 0);
no case has a constant column and no random draw makes one. Truly wrong on any x with a constant
nonzero column -- a column of ones, the most common design matrix (truth14.py constcol)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    hi = jax.lax.pmax(jnp.max(x, axis=0), "data")
    lo = jax.lax.pmin(jnp.min(x, axis=0), "data")
    gw = jnp.where((hi == lo)[:, None], 0.0, gw)
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
