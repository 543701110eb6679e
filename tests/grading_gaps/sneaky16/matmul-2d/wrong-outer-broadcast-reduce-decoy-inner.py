"""matmul-2d, WRONG (the product done whole in the outer body as multiply + reduce_sum): outer
shard_map manual over 'data' only (x's rows; w handed P(), all of it). The outer body computes
out = sum_k x_blk[:, k, None] * w[None, k, :] -- an elementwise multiply of x_blk by ALL of w
followed by a reduce_sum over the contraction (the reduce's operand is the products, not w).
A decoy inner shard_map manual over 'model' computes x_blk @ w_blk, split P(None, 'model'), and
its result is multiplied by zero and added. The product is never written in a body manual over
'model' (left to the compiler, as the gallery's no-shard-map-product, wrong); live XLA partitions
the multiply-reduce over 'model' on its own."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    decoy = jax.shard_map(lambda x, w: x @ w, axis_names={"model"},
                          in_specs=(P(), P(None, "model")), out_specs=P(None, "model"))

    def outer(x, w):
        full = jnp.sum(x[:, :, None] * w[None, :, :], axis=1)
        return full + 0.0 * decoy(x, w)

    return jax.jit(jax.shard_map(outer, mesh=mesh, axis_names={"data"},
                                 in_specs=(P("data", None), P()), out_specs=P("data")))
