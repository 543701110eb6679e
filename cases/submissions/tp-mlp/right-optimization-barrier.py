"""tp-mlp right-optimization-barrier: textbook TP MLP, with lax.optimization_barrier around the
partial output and hidden (to pin the schedule: overlap the matmul with the all-reduce)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    p, h = jax.lax.optimization_barrier((h @ w2, h))
    return jax.lax.psum(p, "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model"))))
