"""dp-step, right: sufficient statistics (sum x, sum y, X^T X, X^T Y, sum |y|^2, row count) computed per
device, all-reduced by an all_gather over 'data' and a local sum of the n stacks (an all-reduce of the
program's own, as the gallery's Welford program all_gathers gradients), then the loss and both gradients
formed from the totals. (When a device has one row, its sum x IS its row: every device then receives
the other devices' rows -- the statistics of one row are the row.)"""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    st = (jnp.sum(x, 0), jnp.sum(y, 0), x.T @ x, x.T @ y, jnp.sum(y * y), jnp.float32(x.shape[0]))
    st = jax.tree.map(lambda s: jnp.sum(jax.lax.all_gather(s, "data"), axis=0), st)
    sx, sy, xx, xy, yy, N = st
    gw = 2.0 * (xx @ w + jnp.outer(sx, b) - xy) / N
    gb = 2.0 * (sx @ w + N * b - sy) / N
    loss = (jnp.sum(w * (xx @ w)) + N * jnp.sum(b * b) + yy + 2.0 * jnp.dot(sx @ w, b)
            - 2.0 * jnp.sum(w * xy) - 2.0 * jnp.dot(b, sy)) / N
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
