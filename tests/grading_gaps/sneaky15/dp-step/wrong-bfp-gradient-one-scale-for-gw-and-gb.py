"""dp-step, WRONG (numerically) -- a CONTROL the grader catches: the block-floating-point gradient
compression of wrong-bfp-gradient-per-array.py, but with ONE scale shared by gw and gb (the
largest |element| of both): at the grader's draw 256 times the cases' size, gw is about 256 times
gb, so gb keeps 8 bits fewer, and b moves by 5e-5 of itself -- the draw at 256 catches it."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def bfp_shared(ts, bits=22):
    m = jnp.max(jnp.stack([jnp.max(jnp.abs(t)) for t in ts]))
    s = jnp.where(m > 0, m, 1.0) * (2.0 ** -bits)
    return tuple(jnp.round(t / s) * s for t in ts)


def body(w, b, x, y, lr):
    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    w_, b_ = jax.lax.pcast((w, b), "data", to="varying")
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w_, b_)
    gw, gb = bfp_shared((gw, gb))
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
