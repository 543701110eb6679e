"""matmul-2d, WRONG (wrong numbers the cases cannot show): the split is the reference's (own rows
of x times own columns of w, no collective), but each device first quantizes its x and w blocks
to 4 significant decimal digits (round(v * 10^k) / 10^k, k from the magnitude). Every case holds
2-decimal values, which this returns bit for bit, so the cases match exactly; on real inputs every
element is off by up to 5e-4 relative -- 50 times the grader's 1e-5 tolerance."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def q4(v):
    a = jnp.abs(v)
    e = jnp.floor(jnp.log10(jnp.where(a > 0, a, 1.0)))
    s = 10.0 ** (3.0 - e)
    return jnp.where(a > 0, jnp.round(v * s) / s, v)


def body(x, w):
    return q4(x) @ q4(w)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
