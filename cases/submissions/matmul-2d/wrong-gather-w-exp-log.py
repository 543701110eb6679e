"""matmul-2d, WRONG (cheat: a gather laundered through elementwise identity arithmetic): every
device all_gathers exp(w) over 'model' and takes log -- the full w, in disguise."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P("data", None), P(None, "model"))
OUT_SPEC = P("data", "model")


def body(x, w):
    c = w.shape[1]
    j = jax.lax.axis_index("model")
    w_full = jnp.log(jax.lax.all_gather(jnp.exp(w), "model", axis=1, tiled=True))
    return jax.lax.dynamic_slice_in_dim(x @ w_full, j * c, c, axis=1)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), in_specs=IN_SPECS,
                                 out_specs=OUT_SPEC, check_vma=False))
