"""matmul-2d, WRONG: two nested shard_maps, the outer one manual over 'data' (x by rows), the inner
one manual over 'model' (w by columns) -- but the inner body all_gathers its product over 'model'
and returns it P(): every device ends holding its rows of out whole, where the exercise leaves out
split P('data', 'model'). Right numbers."""
import jax
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    inner = jax.shard_map(
        lambda x, w: jax.lax.all_gather(x @ w, "model", axis=1, tiled=True),
        axis_names={"model"}, in_specs=(P(), P(None, "model")), out_specs=P(), check_vma=False)
    outer = jax.shard_map(lambda x, w: inner(x, w), mesh=mesh, axis_names={"data"},
                          in_specs=(P("data", None), P()), out_specs=P("data"))
    return jax.jit(outer)
