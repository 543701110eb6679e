"""matmul-2d, right (issue #47.6): x all_gather'ed over 'model' -- where every device of a row of
the mesh holds the same rows of x, so the gathered array is 4 copies of the device's own rows,
never another row -- and the first copy multiplied by the device's columns of w."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    rows = x.shape[0]
    copies = jax.lax.all_gather(x, "model", axis=0, tiled=True)
    return copies[:rows] @ w


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model"), check_vma=False))
