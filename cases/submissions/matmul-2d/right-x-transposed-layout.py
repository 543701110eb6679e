"""matmul-2d, RIGHT (odd-but-valid layout): x is handed to the shard_map transposed, x^T (D, B) with in_specs P(None, 'data') -- split along its second dimension, which is x's rows -- so device (i, j) receives exactly its x rows (as columns); it computes (x_i^T)^T @ w_j, its own out block, no collective."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    sm = jax.shard_map(lambda xt, w: xt.T @ w, mesh=mesh_of(data, model),
                       in_specs=(P(None, "data"), P(None, "model")), out_specs=P("data", "model"))
    return jax.jit(lambda x, w: sm(x.T, w))
