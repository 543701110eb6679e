"""matmul-2d, right: lax.dot_general of w and x (contracting w's rows with x's
columns), gives out transposed, transposed back."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    out_t = jax.lax.dot_general(w, x, (((0,), (1,)), ((), ())))
    return out_t.T

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
