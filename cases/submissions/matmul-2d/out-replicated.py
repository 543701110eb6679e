"""matmul-2d, wrong: out all_gather'ed over both axes and returned replicated (P()):
the right numbers, but out is not left split."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    rows = jax.lax.all_gather(x @ w, "data", axis=0, tiled=True)
    return jax.lax.all_gather(rows, "model", axis=1, tiled=True)

def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P(), check_vma=False))
