"""matmul-2d, right: out returned in a dict, its spec a dict too."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    return {"out": x @ w}

def make(data=2, model=4):
    f = jax.shard_map(body, mesh=mesh_of(data, model),
                      in_specs=(P("data", None), P(None, "model")),
                      out_specs={"out": P("data", "model")})
    return jax.jit(lambda x, w: f(x, w)["out"])
