"""tp-mlp, WRONG (wrong numbers the cases cannot show): the textbook split (hidden units over
'model', psum of the partial outputs, b2 once after), but every device first quantizes the
replicated input x to 4 significant decimal digits (round(v * 10^k) / 10^k). All of tp-mlp's cases
hold x of 1 or 2 decimals, which this returns bit for bit; on real inputs hidden and out are off
by up to ~5e-4 relative, 50 times the 1e-5 tolerance. (The weights, which the grader tracks, are
used as they are.)"""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def q4(v):
    a = jnp.abs(v)
    e = jnp.floor(jnp.log10(jnp.where(a > 0, a, 1.0)))
    s = 10.0 ** (3.0 - e)
    return jnp.where(a > 0, jnp.round(v * s) / s, v)


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(q4(x) @ w1 + b1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model"))))
