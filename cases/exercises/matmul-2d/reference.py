"""matmul-2d, the reference: out = x @ w on a ('data', 'model') mesh with named shardings -- x
split by rows over 'data' (P('data', None)), w by columns over 'model' (P(None, 'model')), and
out left split by both (P('data', 'model')): each device multiplies its rows of x by its columns
of w, and no collective is needed.

Exported to cases/programs/matmul-2d.json by python/export_builtin.py; the example cases'
expected values are this program's outputs under live JAX (make_cases.py)."""
import jax
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    return x @ w


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
