"""matmul-2d, WRONG (every device holds all of w and multiplies by all of it): outer shard_map
manual over 'data' only (x's rows; w handed P(), all of it). In the outer body w is pinned
replicated over 'model' (jax.lax.with_sharding_constraint(w, P()): every device holds the whole
(D, H) w) and x_blk @ w is computed by every device in full, one quarter of w's columns at a time
(static slices: no product has an operand holding all of w). A decoy inner shard_map manual over
'model' returns w's columns unchanged, split P(None, 'model'), and its result is only used as
0 * (x_blk @ decoy) -- also column chunks. The compiled executable: w replicated (5, 16) on every
device, every device computes the whole (B/2, H) product."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    decoy = jax.shard_map(lambda w: w, axis_names={"model"},
                          in_specs=P(None, "model"), out_specs=P(None, "model"))

    def outer(x, w):
        wr = jax.lax.with_sharding_constraint(w, P())
        H = w.shape[1]
        q = H // model
        full = jnp.concatenate([x @ wr[:, i * q:(i + 1) * q] for i in range(model)], axis=1)
        full = jax.lax.with_sharding_constraint(full, P())
        return full + 0.0 * decoy(w)[:1, :]

    return jax.jit(jax.shard_map(outer, mesh=mesh, axis_names={"data"},
                                 in_specs=(P("data", None), P()), out_specs=P("data")))
