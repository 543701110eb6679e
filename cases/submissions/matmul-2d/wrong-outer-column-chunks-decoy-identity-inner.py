"""matmul-2d, WRONG (tensor-parallel work done whole in the outer body): an outer shard_map manual
over 'data' only hands every device its rows of x and ALL of w (in_specs P()); a decoy inner
shard_map manual over 'model' receives w's columns and returns them unchanged, split
P(None, 'model') -- reassembled whole in the outer body. The outer body then computes x_blk @ w
itself, one quarter of w's columns at a time (static slices; no product ever has an operand that
holds all of w), and concatenates. The tensor-parallel product is not written in any body manual
over 'model': it is left to the compiler, as the gallery's no-shard-map-product (wrong) leaves it
(live XLA happens to partition the four column slices over 'model' with collective-permutes;
wrong-outer-replicated-w-chunks-decoy-inner pins w replicated so every device does all of it)."""
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
        w = decoy(w)
        H = w.shape[1]
        q = H // model
        return jnp.concatenate([x @ w[:, i * q:(i + 1) * q] for i in range(model)], axis=1)

    return jax.jit(jax.shard_map(outer, mesh=mesh, axis_names={"data"},
                                 in_specs=(P("data", None), P()), out_specs=P("data")))
