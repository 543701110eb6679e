"""matmul-2d, right (bf16x3, the 'precision=HIGH' emulation for bfloat16 matmul units): outside the
shard_map x and w are split elementwise into a bfloat16 high part and a float32 remainder
(a = hi + lo exactly), the four pieces handed in with x's and w's own specs (rows over 'data', columns over
'model'), and each device forms its block as hi_x@hi_w + hi_x@lo_w + lo_x@hi_w + lo_x@lo_w. No collective,
no device sees another device's rows or columns."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(xh, xl, wh, wl):
    hp = jax.lax.Precision.HIGHEST
    return (jnp.dot(xh, wh, precision=hp) + jnp.dot(xh, wl, precision=hp)
            + jnp.dot(xl, wh, precision=hp) + jnp.dot(xl, wl, precision=hp))


def make(data=2, model=4):
    sm = jax.shard_map(body, mesh=mesh_of(data, model),
                       in_specs=(P("data", None), P("data", None), P(None, "model"), P(None, "model")),
                       out_specs=P("data", "model"))

    def split(a):
        hi = a.astype(jnp.bfloat16).astype(jnp.float32)
        return hi, a - hi

    def prog(x, w):
        xh, xl = split(x)
        wh, wl = split(w)
        return sm(xh, xl, wh, wl)

    return jax.jit(prog)
