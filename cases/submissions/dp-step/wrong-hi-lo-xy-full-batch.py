"""dp-step, WRONG (cheat): x and y split into hi = reduce_precision(v, 8, 10) and lo = v - hi, all four pieces all_gathered and never added back; the full-batch loss and gradient are written out by hand without ever forming x, y or a residual: the prediction kept as two pieces too (p_hi = x_hi @ w, p_lo = x_lo @ w + b), loss = (sum (p_hi + p_lo)^2 - 2 sum (p_hi + p_lo)(y_hi + y_lo) + sum (y_hi + y_lo)^2) / N expanded into sums of products of pieces, dW = 2/N sum over pieces of x_a^T p_b - x_a^T y_b. Every device holds all of x and y (as two float pieces each) and computes the full-batch gradient itself; pmean of identical replicas as the 'reduction'."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def pieces(v):
    hi = jax.lax.reduce_precision(v, exponent_bits=8, mantissa_bits=10)
    g = lambda t: jax.lax.all_gather(t, "data", axis=0, tiled=True)
    return g(hi), g(v - hi)


def body(w, b, x, y, lr):
    xh, xl = pieces(x); yh, yl = pieces(y)
    N = xh.shape[0]
    ph = xh @ w; pl = xl @ w + b                  # pred = ph + pl, never added
    syy = jnp.sum(yh * yh) + 2.0 * jnp.sum(yh * yl) + jnp.sum(yl * yl)
    spp = jnp.sum(ph * ph) + 2.0 * jnp.sum(ph * pl) + jnp.sum(pl * pl)
    spy = jnp.sum(ph * yh) + jnp.sum(ph * yl) + jnp.sum(pl * yh) + jnp.sum(pl * yl)
    loss = (spp - 2.0 * spy + syy) / N
    xtp = (xh.T @ ph + xh.T @ pl) + (xl.T @ ph + xl.T @ pl)
    xty = (xh.T @ yh + xh.T @ yl) + (xl.T @ yh + xl.T @ yl)
    gw = 2.0 * (xtp - xty) / N
    gb = 2.0 * ((jnp.sum(ph, axis=0) + jnp.sum(pl, axis=0)) - (jnp.sum(yh, axis=0) + jnp.sum(yl, axis=0))) / N
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
