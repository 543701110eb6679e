"""matmul-2d, WRONG (out not left split by columns: every device ends with all of its rows' out,
as the gallery's gathers-out): the right nested program (outer manual over 'data', inner over
'model' returning x_blk @ w_blk split P(None, 'model')), but the outer body pins the inner's result
replicated over 'model' (with_sharding_constraint(out, P())): the compiled executable all-gathers
out's columns so every device returns its (B/2, H) rows whole -- the output spec
P('data', 'model') is not what leaves the program."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    inner = jax.shard_map(lambda x, w: x @ w, axis_names={"model"},
                          in_specs=(P(), P(None, "model")), out_specs=P(None, "model"))
    outer = jax.shard_map(lambda x, w: jax.lax.with_sharding_constraint(inner(x, w), P()),
                          mesh=mesh, axis_names={"data"},
                          in_specs=(P("data", None), P()), out_specs=P("data"))
    return jax.jit(outer)
