"""dp-step, right (mixed precision, exact): outside the shard_map x is split elementwise into a bfloat16
high part and a float32 remainder (x = hi + lo exactly, a bf16x2 representation for low-precision
matmul units); both pieces are handed in split by rows over 'data' like x itself, the body uses
hi @ w + lo @ w for the predictions and the gradient, one pmean over 'data'. No reduction outside,
every device only ever sees its own rows."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, hi, lo, y, lr):
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def f(w, b):
        return jnp.mean(jnp.sum((hi @ w + lo @ w + b - y) ** 2, axis=1))

    loss, (gw, gb) = jax.value_and_grad(f, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    sm = jax.shard_map(body, mesh=mesh_of(data),
                       in_specs=(P(), P(), P("data"), P("data"), P("data"), P()), out_specs=(P(), P(), P()))

    def step(w, b, x, y, lr):
        hi = x.astype(jnp.bfloat16).astype(jnp.float32)
        return sm(w, b, hi, x - hi, y, lr)

    return jax.jit(step)
