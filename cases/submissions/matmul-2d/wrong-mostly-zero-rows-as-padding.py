"""matmul-2d, WRONG (numerically): a "sparse rows" shortcut. A row of x whose elements are more
than half zeros is taken for padding and its row of out is set to zero (an all-zero row gives
zero anyway); the other rows are x_blk @ w_blk.

Why it is wrong: sparse data (bag-of-words, one-hot features: most of a row zero, a few not) has
rows with more than half zeros that are not padding: their products are dropped (truth15.py
sparse: x with 5/8 of every row zero, every row of out zeroed). Why the grader misses it: its zero
draw zeroes whole blocks and the first row of x (all-zero rows, where the shortcut is right), its
other draws have no zero at all, and no case has a row of x more than half zeros."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    padding = 2 * jnp.sum(x == 0, axis=1, keepdims=True) > x.shape[1]
    return jnp.where(padding, 0.0, x @ w)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
