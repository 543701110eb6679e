"""matmul-2d, wrong: w replicated (P()) and the product psum'ed over 'model' as if it
were a partial sum: every device holds all of w, and out is 4 times x @ w."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    return jax.lax.psum(x @ w, "model")

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P()),
                                 out_specs=P("data", None)))
