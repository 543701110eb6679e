"""matmul-2d, WRONG (cheat): every device all_gathers w over 'model' with each column scaled by its own factor (3 for even columns, 5 for odd; no single factor makes it a copy of w), computes its row block of the FULL x @ w as (x @ (w * s)) / s, and keeps its own columns. Every device holds all of w and does the whole row's product; the exercise asks for no collective at all."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    c = w.shape[1]; j = jax.lax.axis_index("model")
    col = j * c + jnp.arange(c)
    s = jnp.where(col % 2 == 0, 3.0, 5.0).astype(jnp.float32)
    g = jax.lax.all_gather(w * s[None, :], "model", axis=1, tiled=True)
    sf = jax.lax.all_gather(s, "model", axis=0, tiled=True)
    full = (x @ g) / sf
    return jax.lax.dynamic_slice_in_dim(full, j * c, c, axis=1)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model"), check_vma=False))
