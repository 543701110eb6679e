"""matmul-2d, RIGHT (nested; an elementwise prescale in the outer body): outer shard_map manual over
'data' (x's rows; w handed P(), the compiler's to split over 'model'); the outer body doubles w
(an elementwise op on the automatic axis: XLA does it on each device's columns), the inner
shard_map manual over 'model' receives its columns of 2w, computes (x_blk @ (2 w)_blk) * 0.5 --
exact (powers of two) -- and returns them split P(None, 'model'). No collective; every device
holds only its x rows and w columns (compiled: x (4, 5), w (5, 4) per device)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    inner = jax.shard_map(lambda x, w2: (x @ w2) * 0.5, axis_names={"model"},
                          in_specs=(P(), P(None, "model")), out_specs=P(None, "model"))
    outer = jax.shard_map(lambda x, w: inner(x, w * 2.0), mesh=mesh, axis_names={"data"},
                          in_specs=(P("data", None), P()), out_specs=P("data"))
    return jax.jit(outer)
