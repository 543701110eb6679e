"""matmul-2d, WRONG (cheat, different dtype): w is split into an int32 fixed-point part q = floor(w * 1024) and a float32 remainder r = w - q / 1024; both are all_gathered over 'model' (q as int32) and never recombined into w: each device computes its row block of the WHOLE x @ w as (x @ float(q)) / 1024 + x @ r and keeps its own columns. Every device holds all of w (as an integer plus a remainder) and does every column's product; the exercise asks for no collective."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    c = w.shape[1]; j = jax.lax.axis_index("model")
    q = jnp.floor(w * 1024.0).astype(jnp.int32)
    r = w - q.astype(jnp.float32) / 1024.0
    Q = jax.lax.all_gather(q, "model", axis=1, tiled=True)
    R = jax.lax.all_gather(r, "model", axis=1, tiled=True)
    full = (x @ Q.astype(jnp.float32)) / 1024.0 + x @ R
    return jax.lax.dynamic_slice_in_dim(full, j * c, c, axis=1)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model"), check_vma=False))
