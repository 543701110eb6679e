"""matmul-2d, WRONG (every device holds all of x and computes all B rows of its columns): the
nesting swapped -- the outer shard_map is manual over 'model' only (w's columns split, right),
x handed P() and pinned replicated over 'data' (with_sharding_constraint(x, P())). The outer body
computes x @ w_blk for ALL rows itself, x in `data` chunks of rows (static slices: no product has
an operand holding all of x). A decoy inner shard_map manual over 'data' takes x's rows and returns
them, split P('data') (the "nested map returning a result split over 'data' along dim 0"); its
result is only used times 0. The compiled executable gives every device all of x; every device
of a 'model' column computes the same whole (B, H/4) block -- the 'data' split is never used."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    decoy = jax.shard_map(lambda x: x, axis_names={"data"},
                          in_specs=P("data"), out_specs=P("data"))

    def outer(x, w):
        x = jax.lax.with_sharding_constraint(x, P())
        B = x.shape[0]
        r = B // data
        full = jnp.concatenate([x[i * r:(i + 1) * r] @ w for i in range(data)], axis=0)
        full = jax.lax.with_sharding_constraint(full, P())
        return full + 0.0 * decoy(x)[:, :1]

    return jax.jit(jax.shard_map(outer, mesh=mesh, axis_names={"model"},
                                 in_specs=(P(), P(None, "model")), out_specs=P(None, "model")))
