"""tp-mlp, right: the layers as jax.jit-decorated helpers called inside the body (nested jit)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


@jax.jit
def layer1(x, w1, b1):
    return jax.nn.relu(x @ w1 + b1)


@jax.jit
def partial_out(h, w2):
    return h @ w2


def body(x, w1, b1, w2, b2):
    h = layer1(x, w1, b1)
    return jax.lax.psum(partial_out(h, w2), "model") + b2, h


def make(model=8):
    in_specs = (P(), P(None, "model"), P("model"), P("model", None), P())
    out_specs = (P(), P(None, "model"))
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=in_specs,
                                 out_specs=out_specs))
