"""tp-mlp, RIGHT: the batch processed row by row with jax.lax.map (a scan over the rows of x --
the memory-saving idiom for large batches): each row's hidden block relu(x_r @ w1_blk + b1_blk)
and its partial output; the partials of all rows psum'd over 'model' once, b2 added once after;
hidden left split."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def body(x, w1, b1, w2, b2):
    def row(xr):
        h = jax.nn.relu(xr @ w1 + b1)
        return h, h @ w2
    h, p = jax.lax.map(row, x)
    return jax.lax.psum(p, "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), **SPECS))
