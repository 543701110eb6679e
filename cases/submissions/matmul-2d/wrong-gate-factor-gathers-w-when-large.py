"""matmul-2d wrong-gate-factor-gathers-w-when-large: no cond: a 0/1 factor big = (max|w block| >
1e3, each device on its own block: a pmax of max|w| would hold that element) multiplies w before an all_gather over 'model'; each device computes its row of x times the
gathered W and slices its columns, and returns big * that + (1 - big) * the local product. On
every case and draw (|w| <= 512) the gather moves zeros and the local product is returned; on
large w every device holds all of w and does its row's whole product. The grader replays the
case's decisions (big = 0) on its draws, and judges cond branches, not a factor's other value
(sneaky13's cond-on-large class without the cond). Truly wrong: structural (truth14.py)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    big = (jnp.max(jnp.abs(w)) > 1e3).astype(jnp.float32)   # each device on its own block
    hb = w.shape[1]
    W = jax.lax.all_gather(w * big, "model", axis=1, tiled=True)
    row = x @ W
    full = jax.lax.dynamic_slice_in_dim(row, jax.lax.axis_index("model") * hb, hb, axis=1)
    return big * full + (1.0 - big) * (x @ w)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model"), check_vma=False))
