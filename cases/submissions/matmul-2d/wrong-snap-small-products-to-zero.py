"""matmul-2d wrong-snap-small-products-to-zero: the local product, then every element of the
device's out block smaller than 1e-5 times the block's largest is set to 0 ("noise cleanup").
Wrong whenever w's columns (or x's rows) differ in scale by 1e5: the small ones come out 0."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    o = x @ w
    return jnp.where(jnp.abs(o) < 1e-5 * jnp.max(jnp.abs(o)), 0.0, o)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
