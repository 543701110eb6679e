"""tp-mlp, right (issue #30): b2 added once, inside the psum, by device 0 alone -- every other
device adds zeros, so the sum holds b2 exactly once. A grader that looks for b2 "flowing into"
the psum fails it; out is the same as the reference's."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    first = jax.lax.axis_index("model") == 0
    out = jax.lax.psum(h @ w2 + jnp.where(first, b2, jnp.zeros_like(b2)), "model")
    return out, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), **SPECS))
