"""dp-step, WRONG (numerically): gradient compression before the all-reduce. Each device rounds
its local gradients to block floating point -- one scale per array (gw, gb): its largest
|element|, each element an integer multiple of that scale times 2^-22 -- then the loss and the rounded gradients are pmean'd over 'data' and the step taken.

Why it is wrong: targets on different scales (y's column 0 in the tens of millions -- revenue --
column 1 in units) give gradient columns 1e7 apart, and the small column is rounded to the large
one's grid (about 2.4): its weights' updates are off by ~1 gradient unit, w[:, 1] off by ~0.05
for lr 0.05 (truth15.py mixed: every element of w[:, 1:] and b[1:] outside the tolerance, w off by up to
0.042; the gallery's right.py none). The
grader's draws keep every input's elements within a factor 4 of each other, so the gradients stay
within a few bits of each other and the rounding hides below float32's own; dp-step has no
columns draw. (A first version shared one scale between gw and gb: the draw at 256, where gw is
256 times gb, caught it.)"""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def bfp(t, bits=22):
    """t rounded to a grid of (its max |t|) * 2^-bits."""
    m = jnp.max(jnp.abs(t))
    s = jnp.where(m > 0, m, 1.0) * (2.0 ** -bits)
    return jnp.round(t / s) * s


def body(w, b, x, y, lr):
    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    w_, b_ = jax.lax.pcast((w, b), "data", to="varying")
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w_, b_)
    gw, gb = bfp(gw), bfp(gb)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
