"""matmul-2d, WRONG (every device also holds and multiplies its neighbour's columns of w: double
work, another device's block): outer shard_map manual over 'data' (x's rows; w handed P()). The
outer body calls the inner shard_map (manual over 'model', x_blk @ w_blk, P(None, 'model')) twice:
on w, and on w with its column blocks rolled by one (jnp.roll in the outer body, a move), rolling
the second result back. out is the mean of the two (equal) results. Every inner device holds two
blocks of w -- its own and its neighbour's -- and computes both products."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    inner = jax.shard_map(lambda x, w: x @ w, axis_names={"model"},
                          in_specs=(P(), P(None, "model")), out_specs=P(None, "model"))

    def outer(x, w):
        q = w.shape[1] // model
        mine = inner(x, w)
        theirs = jnp.roll(inner(x, jnp.roll(w, q, axis=1)), w.shape[1] - q, axis=1)
        return (mine + theirs) * 0.5

    return jax.jit(jax.shard_map(outer, mesh=mesh, axis_names={"data"},
                                 in_specs=(P("data", None), P()), out_specs=P("data")))
