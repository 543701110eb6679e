"""matmul-2d, WRONG: the whole w assembled on every device by jax.lax.map over w's rows, each row
all_gather'ed over 'model' inside a nested jax.jit; each device then multiplies by its columns."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


gather_row = jax.jit(lambda r: jax.lax.all_gather(r, "model", tiled=True))


def body(x, w):
    cols = w.shape[1]
    w_full = jax.lax.map(gather_row, w)            # (D, H): all of w
    j = jax.lax.axis_index("model")
    return x @ jax.lax.dynamic_slice_in_dim(w_full, j * cols, cols, axis=1)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model"), check_vma=False))
