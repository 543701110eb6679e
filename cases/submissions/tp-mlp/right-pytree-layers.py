"""tp-mlp, right: layers as dict pytrees, a generic dense(layer, x)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def dense(layer, x):
    return x @ layer["w"] + layer.get("b", 0.0)


def body(x, w1, b1, w2, b2):
    l1, l2 = {"w": w1, "b": b1}, {"w": w2}
    h = jax.nn.relu(dense(l1, x))
    return jax.lax.psum(dense(l2, h), "model") + b2, h


def make(model=8):
    in_specs = (P(), P(None, "model"), P("model"), P("model", None), P())
    out_specs = (P(), P(None, "model"))
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=in_specs,
                                 out_specs=out_specs))
