"""matmul-2d, right: the body takes (w, x), its specs swapped to match; the jitted
program calls it with x, w."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(w, x):
    return x @ w

def make(data=2, model=4):
    f = jax.shard_map(body, mesh=mesh_of(data, model),
                      in_specs=(P(None, "model"), P("data", None)), out_specs=P("data", "model"))
    return jax.jit(lambda x, w: f(w, x))
