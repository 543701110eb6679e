"""matmul-2d right-explicit-axis-types: the local product on a mesh of AxisType.Explicit axes
(JAX's "explicit sharding" mode): inside jit the inputs are resharded to the exercise's layout
(jax.sharding.reshard, as that mode requires), then the shard_map multiplies each device's blocks."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P


def make(data=2, model=4):
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Explicit,) * 2,
                         devices=jax.devices()[:data * model])
    sm = jax.shard_map(lambda x, w: x @ w, mesh=mesh,
                       in_specs=(P("data", None), P(None, "model")), out_specs=P("data", "model"))

    def prog(x, w):
        x = jax.sharding.reshard(x, NamedSharding(mesh, P("data", None)))
        w = jax.sharding.reshard(w, NamedSharding(mesh, P(None, "model")))
        return sm(x, w)
    return jax.jit(prog)
