"""matmul-2d, WRONG (the last step of every dot product done outside the mesh): each device
multiplies its rows of x by its columns of w over the FIRST half of the contraction and, apart,
over the second half, and hands both partial blocks back stacked (out_specs P(None, 'data',
'model')); the two halves are added OUTSIDE the shard_map, on one device, into out. No device
returns its finished block of out."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    k = (x.shape[1] + 1) // 2
    return jnp.stack([x[:, :k] @ w[:k], x[:, k:] @ w[k:]])


def make(data=2, model=4):
    sm = jax.shard_map(body, mesh=mesh_of(data, model),
                       in_specs=(P("data", None), P(None, "model")),
                       out_specs=P(None, "data", "model"))

    def f(x, w):
        parts = sm(x, w)
        return parts[0] + parts[1]
    return jax.jit(f)
