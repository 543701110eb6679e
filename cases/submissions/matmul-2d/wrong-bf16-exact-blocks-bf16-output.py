"""matmul-2d, WRONG (numerically): a mixed-precision fast path. When a device's x and w blocks are
exactly representable in bfloat16 (a bf16 model's activations and weights kept in float32
containers), it multiplies them as bf16 (lossless for such inputs, float32 accumulation) but
returns the product as a bf16 tensor -- rounded to 8 significant bits -- before widening it back
to float32 for the output. Other blocks: the float32 product.

Why it is wrong: bf16-exact inputs whose products need more than 8 bits (almost all) come out
rounded by up to 2^-9 relative: truth15.py bf16 puts most elements of out outside the tolerance.
Why the grader misses it: no draw is bf16-exact (23 random fraction bits, or whole numbers of up
to 29 bits); the one case that is (example4, integers of at most 9, contraction of 4) has every
output an integer of at most 155 in magnitude, exact in bf16."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def bf16_exact(a):
    return jnp.all(a.astype(jnp.bfloat16).astype(jnp.float32) == a)


def body(x, w):
    fast = jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16),
                   preferred_element_type=jnp.float32).astype(jnp.bfloat16).astype(jnp.float32)
    return jnp.where(bf16_exact(x) & bf16_exact(w), fast, x @ w)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
