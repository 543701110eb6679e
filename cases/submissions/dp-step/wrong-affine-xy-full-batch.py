"""dp-step, WRONG (cheat): every device all_gathers x + 0.37 and y + 0.37 (an affine encoding, never decoded) and computes the FULL-batch loss and gradient itself from expanded sums that never form x, y or the residual: pred = (x+c) @ w + (b - c colsum(w)); loss = (sum pred^2 - 2 sum pred*y + sum y^2) / N with sum pred*y = sum pred*(y+c) - c sum pred, sum y^2 = sum (y+c)^2 - 2c sum (y+c) + N K c^2; x^T pred and x^T y expanded the same way. The 'reduction' is a pmean of n identical replicas. Every device holds all of x and y (shifted) and does the whole batch's work."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

C = 0.37


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    xe = jax.lax.all_gather(x + C, "data", axis=0, tiled=True)   # (N, D) = x + C
    ye = jax.lax.all_gather(y + C, "data", axis=0, tiled=True)   # (N, K) = y + C
    N, K = ye.shape
    pred = xe @ w + (b - C * jnp.sum(w, axis=0))                  # (N, K), the whole batch
    s_py = jnp.sum(pred * ye) - C * jnp.sum(pred)
    s_yy = jnp.sum(ye * ye) - 2.0 * C * jnp.sum(ye) + N * K * C * C
    loss = (jnp.sum(pred * pred) - 2.0 * s_py + s_yy) / N
    xtp = xe.T @ pred - C * jnp.sum(pred, axis=0)[None, :]        # x^T pred
    xty = xe.T @ ye - C * jnp.sum(ye, axis=0)[None, :] - C * jnp.sum(xe, axis=0)[:, None] + N * C * C
    gw = 2.0 * (xtp - xty) / N
    gb = 2.0 * (jnp.sum(pred, axis=0) - (jnp.sum(ye, axis=0) - N * C)) / N
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
