"""jax.random inside a shard_map over 8 devices (issue #49, jax.random): a dropout layer whose mask
differs per device -- jax.random.fold_in(key, axis_index) then bernoulli -- and noise drawn with
uniform and normal (x times a normal draw: Gaussian dropout), from a key made of an int32 seed input (random_seed, random_fold_in,
random_split, random_bits, threefry2x32 on uint32 inside meshrun), and a psum of the kept count.

Source: the dropout idiom of flax.linen.Dropout and JAX's docs (jax.random's "Generating random
numbers in parallel" with fold_in of the axis index). Constructs: random_seed, random_fold_in,
random_split, random_bits, shift_right_logical / or / bitcast_convert_type on uint32, erf_inv,
psum."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x", "seed")
OUTPUTS = ("y", "kept")
SHAPES = {"x": "N,D", "seed": ""}
DTYPES = {"seed": "i32"}
INTS = {"seed": (0, 1000)}
MESH = (("i", 8),)
RATE = 0.25


def body(x, seed):
    key = jax.random.fold_in(jax.random.key(seed[()]), lax.axis_index("i"))
    k_drop, k_noise = jax.random.split(key)
    keep = jax.random.bernoulli(k_drop, 1.0 - RATE, x.shape)
    y = jnp.where(keep, x / (1.0 - RATE), 0.0)
    y = y + x * jax.random.normal(k_noise, x.shape)  # Gaussian (multiplicative) noise
    y = y + jax.random.uniform(jax.random.fold_in(k_noise, 1), x.shape, minval=-0.5, maxval=0.5)
    return y, lax.psum(jnp.sum(keep.astype(jnp.float32)), "i")


def make(i=8):
    mesh = jax.make_mesh((i,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:i])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("i"), P()), out_specs=(P("i"), P())))
