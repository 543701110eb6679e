"""A mixed-precision training step over 8 devices (issue #49, dtypes): float32 master weights,
a bfloat16 batch split over 'batch'; the forward and backward in bfloat16 (the weights converted,
bf16 dot_generals accumulating in float32, tanh, its gradient), the loss and the gradients
converted to float32 (the transpose of the weights' pvary: a bf16 psum), one SGD step taken.

Source: the mixed-precision recipe of jmp / the JAX docs' "bfloat16 compute, float32 params" on
the shard_map tutorial's data-parallel MLP (docs/notebooks/shard_map.md, "8-way batch data
parallelism"). Constructs: convert_element_type f32 <-> bf16, bf16 dot_general and its transpose,
bf16 tanh, bf16 reduce_sum (a bias's gradient), psum of bf16 gradients converted to f32."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("w1", "b1", "w2", "x", "y")
OUTPUTS = ("loss", "w1_new", "b1_new", "w2_new")
SHAPES = {"w1": "D,H", "b1": "H", "w2": "H,C", "x": "N,D", "y": "N,C"}
DTYPES = {"x": "bf16", "y": "bf16"}
MESH = (("batch", 8),)
LR = 0.1


def loss_local(w1, b1, w2, x, y):
    bf = jnp.bfloat16
    h = jnp.tanh(x @ w1.astype(bf) + b1.astype(bf))
    out = h @ w2.astype(bf)
    err = (out - y).astype(jnp.float32)
    return jnp.mean(err * err)


def step_local(w1, b1, w2, x, y):
    loss, (g1, gb, g2) = jax.value_and_grad(loss_local, argnums=(0, 1, 2))(w1, b1, w2, x, y)
    # The weights are replicated: their gradients come summed over 'batch' already (the
    # transpose of their pvary is a psum, here of bf16, converted to f32 after).
    loss = jax.lax.psum(loss, "batch") / 8
    return loss, w1 - LR * g1 / 8, b1 - LR * gb / 8, w2 - LR * g2 / 8


def make(batch=8):
    mesh = jax.make_mesh((batch,), ("batch",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:batch])
    return jax.jit(jax.shard_map(step_local, mesh=mesh,
                                 in_specs=(P(), P(), P(), P("batch"), P("batch")),
                                 out_specs=(P(), P(), P(), P())))
