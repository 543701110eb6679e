"""dp-step, WRONG (numerically): mixed-precision gradient communication. When a device's w, b, x
and y are all exactly representable in bfloat16 (a bf16 pipeline's data in float32 containers),
it rounds its local gradients to bfloat16 before the pmean ("bf16 inputs, bf16 gradients"); the
loss and everything else stay float32. Otherwise the textbook float32 step.

Why it is wrong: bf16-exact inputs give gradients with far more than 8 significant bits; rounding
them moves the update by up to 2^-9 of each gradient: truth15.py bf16 puts w and b outside the
tolerance. Why the grader misses it: no draw is bf16-exact (23 random fraction bits, or whole
numbers of up to 29 bits); the one case that is (example1: x = 1..8, y = 2x + 1, w = b = 0) has
each device's gradients -2 x y and -2 y, integers of at most 8 significant bits, exact in bf16."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def bf16_exact(a):
    return jnp.all(a.astype(jnp.bfloat16).astype(jnp.float32) == a)


def to_bf16(a):
    return a.astype(jnp.bfloat16).astype(jnp.float32)


def body(w, b, x, y, lr):
    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    w_, b_ = jax.lax.pcast((w, b), "data", to="varying")
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w_, b_)
    low = bf16_exact(w) & bf16_exact(b) & bf16_exact(x) & bf16_exact(y)
    gw = jnp.where(low, to_bf16(gw), gw)
    gb = jnp.where(low, to_bf16(gb), gb)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
