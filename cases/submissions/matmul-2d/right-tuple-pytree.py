"""matmul-2d, right: the inputs as one tuple (a pytree) in, out as a one-element
tuple out."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(xw):
    x, w = xw
    return (x @ w,)

def make(data=2, model=4):
    f = jax.shard_map(body, mesh=mesh_of(data, model),
                      in_specs=((P("data", None), P(None, "model")),),
                      out_specs=(P("data", "model"),))

    def program(x, w):
        (out,) = f((x, w))
        return out

    return jax.jit(program)
