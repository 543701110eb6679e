"""matmul-2d, right: the local block product written as a 1x1 convolution -- the rows of x as a batch of
length-1 signals with D channels, w's columns as H_blk output channels (lax.conv_general_dilated, NWC/WIO)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    y = jax.lax.conv_general_dilated(x[:, None, :], w[None, :, :], window_strides=(1,), padding="VALID",
                                     dimension_numbers=("NWC", "WIO", "NWC"),
                                     precision=jax.lax.Precision.HIGHEST)
    return y[:, 0, :]


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")), out_specs=P("data", "model")))
