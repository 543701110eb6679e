"""matmul-2d, WRONG (cheat): w gathered one row at a time (D all_gathers, each row used at once as a rank-one update of the FULL x @ w), own columns sliced at the end: every device receives all of w and computes the whole row block of out."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P("data", None), P(None, "model"))
OUT_SPEC = P("data", "model")


def make(data=2, model=4):
    return jax.jit(jax.shard_map(lambda x, w: body(model, x, w), mesh=mesh_of(data, model),
                                 in_specs=IN_SPECS, out_specs=OUT_SPEC, check_vma=False))


def body(n, x, w):
    c = w.shape[1]; i = jax.lax.axis_index("model")
    acc = jnp.zeros((x.shape[0], n * c), x.dtype)
    for r in range(w.shape[0]):
        acc = acc + x[:, r:r + 1] * jax.lax.all_gather(w[r], "model", axis=0, tiled=True)[None, :]
    return jax.lax.dynamic_slice_in_dim(acc, i * c, c, axis=1)
