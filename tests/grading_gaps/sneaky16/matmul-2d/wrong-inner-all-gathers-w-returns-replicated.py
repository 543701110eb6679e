"""matmul-2d, WRONG (control: the inner map gathers w and returns the whole product replicated):
outer shard_map manual over 'data', inner one manual over 'model' handed w's columns
(P(None, 'model')); the inner body all_gathers w over 'model' (every device: all of w), computes
x_blk @ w and returns it P() (replicated over 'model'). A second, decoy inner map returns x_blk @
w_blk split P(None, 'model') (the split result the output_spec rule looks for), added times 0."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    gathered = jax.shard_map(
        lambda x, w: x @ jax.lax.all_gather(w, "model", axis=1, tiled=True), axis_names={"model"},
        in_specs=(P(), P(None, "model")), out_specs=P(), check_vma=False)
    decoy = jax.shard_map(lambda x, w: x @ w, axis_names={"model"},
                          in_specs=(P(), P(None, "model")), out_specs=P(None, "model"))
    outer = jax.shard_map(lambda x, w: gathered(x, w) + 0.0 * decoy(x, w), mesh=mesh,
                          axis_names={"data"}, in_specs=(P("data", None), P()),
                          out_specs=P("data"))
    return jax.jit(outer)
