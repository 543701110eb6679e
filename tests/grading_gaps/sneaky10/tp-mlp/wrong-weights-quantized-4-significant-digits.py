"""tp-mlp, WRONG (wrong numbers the cases cannot show): the textbook split (hidden units over
'model', psum of the partial outputs, b2 once after), but every device first quantizes its w1, b1
and w2 blocks to 4 significant decimal digits (round(v * 10^k) / 10^k). All of tp-mlp's cases hold
weights of 1 or 2 decimals, which this returns bit for bit; on real weights out and hidden are off
by up to ~5e-4 relative, far beyond the 1e-5 tolerance."""
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
    h = jax.nn.relu(x @ q4(w1) + q4(b1))
    return jax.lax.psum(h @ q4(w2), "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model"))))
