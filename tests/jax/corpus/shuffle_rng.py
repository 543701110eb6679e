"""jax.random's sorting draws inside a shard_map over 8 devices (issue #49, uint32 sort): each
device shuffles its own rows -- jax.random.permutation keyed by fold_in(key, axis_index) -- takes a
minibatch of them without replacement (jax.random.choice(..., replace=False)) and one with
replacement (row indices from jax.random.randint, whose int32 bounds are clipped with literals of
2^31 - 1), and permutes the columns of every row independently (permutation(..., independent=True));
the minibatches' means are psum'd.

Source: the per-device data shuffling of an input pipeline written in JAX (flax's examples shuffle
with jax.random.permutation; JAX's docs "Generating random numbers in parallel" fold in the axis
index). Constructs: random_seed, random_fold_in, random_split, random_bits, sort of uint32 keys
with a payload (jax.random.permutation's rounds), uint32 rem, int32 literals beyond 2^24, gather,
psum."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x", "seed")
OUTPUTS = ("shuffled", "mixed", "mean", "sampled")
SHAPES = {"x": "N,D", "seed": ""}
DTYPES = {"seed": "i32"}
INTS = {"seed": (0, 1000)}
MESH = (("i", 8),)
BATCH = 3


def body(x, seed):
    key = jax.random.fold_in(jax.random.key(seed[()]), lax.axis_index("i"))
    k_rows, k_batch, k_cols, k_idx = jax.random.split(key, 4)
    shuffled = jax.random.permutation(k_rows, x)
    batch = jax.random.choice(k_batch, x, (BATCH,), replace=False)
    mixed = jax.random.permutation(k_cols, x, axis=1, independent=True)
    sampled = x[jax.random.randint(k_idx, (BATCH,), 0, x.shape[0])]
    return shuffled, mixed, lax.psum(jnp.mean(batch, axis=0), "i"), sampled


def make(i=8):
    mesh = jax.make_mesh((i,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:i])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("i"), P()),
                                 out_specs=(P("i"), P("i"), P(), P("i"))))
