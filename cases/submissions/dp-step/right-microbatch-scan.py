"""dp-step, right: gradient accumulation -- the device's block split into micro-batches (up to 4,
as many as divide its rows), a `jax.lax.scan` over them adds up each micro-batch's loss and
gradient in its carry, the sums divided by the number of micro-batches (the block's mean, the
micro-batches being equal), then one pmean over 'data'."""
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

    def accumulate(carry, batch):
        loss_sum, gw_sum, gb_sum = carry
        loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv, *batch)
        return (loss_sum + loss, gw_sum + gw, gb_sum + gb), None

    zero = jax.lax.pcast(jnp.zeros((), x.dtype), "data", to="varying")
    zeros = (zero, jnp.zeros_like(wv), jnp.zeros_like(bv))
    (loss, gw, gb), _ = jax.lax.scan(accumulate, zeros, (xs, ys))
    loss, gw, gb = loss / micro, gw / micro, gb / micro
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
