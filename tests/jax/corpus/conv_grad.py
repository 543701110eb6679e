"""8-way batch data parallelism over a convolution layer, the gradient of the loss with respect
to the kernel, the bias and the input: a shard_map holding the loss (pmean over 'batch'),
differentiated with jax.value_and_grad under jit. The layer is a conv (NHWC images, HWIO
kernel) with window_strides (2, 1), rhs_dilation (1, 2) and SAME padding; its gradient is two more
conv_general_dilated of the forms JAX's transpose rules emit (lhs_dilation and padding for the
input's, the kernel's with the batch as its contraction) and a `rev` of the kernel. Beside it,
outside the shard_map, a grouped conv (feature_group_count 2, `yg`) and a batch-grouped one
(batch_group_count 2, `yb`, the form of a grouped conv's kernel gradient) of the same input.
(The gradient of a grouped conv itself holds a reshape with `dimensions`, which meshrun refuses.)

Source: jax-ml/jax docs/notebooks/shard_map.md, "Neural networks" / "8-way batch data
parallelism" (loss_dp, jax.jit(jax.grad(loss_dp))), with a conv layer (jax.lax.conv_general_dilated,
as flax.linen.Conv calls it) instead of the tutorial's dense layers.
Constructs: conv_general_dilated and its gradient, rev, value_and_grad of shard_map, pmean."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

INPUTS = ("w", "b", "x")
OUTPUTS = ("loss", "gw", "gb", "gx", "yg", "yb")
SHAPES = {"w": "K,K,C,F", "b": "F", "x": "N,S,S,C"}
MESH = (("batch", 8),)


def layer(w, b, x):
    y = jax.lax.conv_general_dilated(x, w, window_strides=(2, 1), padding="SAME",
                                     rhs_dilation=(1, 2),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jnp.tanh(y + b)


def loss_dp(w, b, x):
    local = jnp.mean(layer(w, b, x) ** 2)
    return jax.lax.pmean(local, "batch")


def make(batch=8):
    mesh = jax.make_mesh((batch,), ("batch",), devices=jax.devices()[:batch])
    sm = jax.shard_map(loss_dp, mesh=mesh, in_specs=(P(), P(), P("batch")), out_specs=P())
    vg = jax.value_and_grad(sm, argnums=(0, 1, 2))

    def step(w, b, x):
        loss, (gw, gb, gx) = vg(w, b, x)
        # grouped: 2 groups of 2 input features; the kernel's 4 inputs halved
        yg = jax.lax.conv_general_dilated(x, w[:, :, :2, :], (1, 1), ((1, 1), (0, 2)),
                                          lhs_dilation=(1, 2),
                                          dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                          feature_group_count=2)
        # batch-grouped: the batch of 16 in 2 groups, each for 2 of the 4 output features
        yb = jax.lax.conv_general_dilated(x, w, (1, 2), ((0, 0), (-1, 1)),
                                          dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                          batch_group_count=2)
        return loss, gw, gb, gx, yg, yb
    return jax.jit(step)
