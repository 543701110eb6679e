"""dp-step, wrong: gradient accumulation by a `jax.lax.scan` over micro-batches of the device's
block (up to 4, as many as divide its rows) that sums the micro-batches' gradients in its carry
and never divides the sum by their number (the loss, from the scan's stacked per-micro-batch
losses, is averaged right): the update is `micro` times the mean gradient -- right where a
block has one row (example1), twice it where two (example2)."""
import math

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def loss_fn(w, b, x, y):
    return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))


def body(w, b, x, y, lr):
    rows = x.shape[0]
    micro = math.gcd(rows, 4)
    xs = x.reshape(micro, rows // micro, x.shape[1])
    ys = y.reshape(micro, rows // micro, y.shape[1])
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def accumulate(grads, batch):
        loss, g = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv, *batch)
        return jax.tree.map(jnp.add, grads, g), loss

    zeros = jax.tree.map(jnp.zeros_like, (wv, bv))
    (gw, gb), losses = jax.lax.scan(accumulate, zeros, (xs, ys))
    loss, gw, gb = jax.lax.pmean((jnp.mean(losses), gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
