"""matmul-2d wrong-honest-all-gather-out-row-then-slice, a mistake against the statement ('no collective'): each device
computes its own block x_blk @ w_blk, then all_gathers the out blocks over 'model' (to 'assemble the row' as it would
for a replicated output) and slices its own block back out. Right numbers, an all_gather the exercise forbids (it
moves no input, only results)."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def make(data, model):
    mesh = Mesh(np.array(jax.devices()[:data * model]).reshape(data, model), ("data", "model"))

    def body(x, w):
        row = lax.all_gather(x @ w, "model", axis=1, tiled=True)
        hb = w.shape[1]
        return lax.dynamic_slice_in_dim(row, lax.axis_index("model") * hb, hb, axis=1)

    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model"), check_vma=False))
