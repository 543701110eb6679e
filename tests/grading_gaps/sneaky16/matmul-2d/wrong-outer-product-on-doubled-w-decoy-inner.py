"""matmul-2d, WRONG (the whole product in the outer body, on a scaled copy of all of w): outer
shard_map manual over 'data' only (x's rows; w handed P() and pinned replicated over 'model' by
with_sharding_constraint: every device holds all of w). The outer body computes
(x_blk @ (2 w)) * 0.5 -- one dot_general whose operand is all of w doubled (exact) -- so every
device computes all H columns of its rows. A decoy inner shard_map manual over 'model' returns
w's columns split P(None, 'model'), used times 0."""
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
        full = jax.lax.with_sharding_constraint((x @ (wr * 2.0)) * 0.5, P())
        return full + 0.0 * decoy(w)[:1, :]

    return jax.jit(jax.shard_map(outer, mesh=mesh, axis_names={"data"},
                                 in_specs=(P("data", None), P()), out_specs=P("data")))
