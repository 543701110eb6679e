"""matmul-2d, WRONG: two nested shard_maps, the outer one manual over 'data' only (x by rows), the
inner one manual over 'model' -- but the product x_blk @ w is taken in the outer body, where
'model' is automatic and the body holds all of w: the work of every 'model' device done whole
(the compiler's to split, not the program's). The inner shard_map only cuts the finished rows into
their column blocks, so out is returned P('data', 'model') as asked. Right numbers; no device is
written to hold only its columns of w."""
import jax
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    cut = jax.shard_map(lambda o: o, axis_names={"model"},
                        in_specs=P(None, "model"), out_specs=P(None, "model"))
    outer = jax.shard_map(lambda x, w: cut(x @ w), mesh=mesh, axis_names={"data"},
                          in_specs=(P("data", None), P()), out_specs=P("data"))
    return jax.jit(outer)
