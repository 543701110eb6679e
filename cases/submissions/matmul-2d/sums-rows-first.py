"""matmul-2d, wrong: sums x's rows before the product (a batch reduction by mistake):
every row of out is the block's row sum times w."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    s = jnp.sum(x, axis=0, keepdims=True) @ w
    return jnp.broadcast_to(s, (x.shape[0], w.shape[1]))

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
