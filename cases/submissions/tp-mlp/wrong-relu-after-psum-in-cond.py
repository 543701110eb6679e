"""tp-mlp, wrong: the layers split in a `jax.lax.cond` on the replicated x (an overflow guard:
scale down by 2^-10 before the psum when |x| is large), and in both branches the relu is applied
after the psum of the pre-activation's products -- relu(psum(z @ w2)), not psum(relu(z) @ w2):
hidden is returned as relu(z), out wrong wherever a hidden unit is negative."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def plain(z, w2):
    return jax.nn.relu(jax.lax.psum(z @ w2, "model"))


def scaled(z, w2):
    return jax.nn.relu(jax.lax.psum((z * 2.0 ** -10) @ w2, "model")) * 2.0 ** 10


def body(x, w1, b1, w2, b2):
    z = x @ w1 + b1
    large = jnp.max(jnp.abs(x)) > 1e4
    out = jax.lax.cond(large, scaled, plain, z, w2) + b2
    return out, jax.nn.relu(z)


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), **SPECS))
