"""matmul-2d wrong-int32-fast-path-integer-inputs: "integer fast path": when a device's x and w
blocks hold only integers, it multiplies them as int32 (x.astype(int32) @ w.astype(int32)) and
converts back; otherwise the float32 product. Exact for the integer case (example4, |x|,|w| <= 9)
and the draws' zero blocks. Truly wrong: integer-valued inputs whose products pass 2^31 wrap
around (x = w = 50000: out -1.79e9 instead of 2.5e9; truth14.py intbig)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    integral = jnp.all(x == jnp.round(x)) & jnp.all(w == jnp.round(w))
    fast = (x.astype(jnp.int32) @ w.astype(jnp.int32)).astype(jnp.float32)
    return jnp.where(integral, fast, x @ w)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
