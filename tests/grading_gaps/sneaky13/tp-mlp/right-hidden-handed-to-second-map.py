"""tp-mlp right-hidden-handed-to-second-map: layer 1 in a first shard_map (hidden returned split by
units, P(None, 'model')); a second shard_map takes that hidden with the same spec (each device gets
its own block back) and w2 split by rows, and does the partial product, psum and b2 -- a model
written layer by layer."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(model=8):
    mesh = mesh_of(model)
    l1 = jax.shard_map(lambda x, w1, b1: jax.nn.relu(x @ w1 + b1), mesh=mesh,
                       in_specs=(P(), P(None, "model"), P("model")), out_specs=P(None, "model"))
    l2 = jax.shard_map(lambda h, w2, b2: jax.lax.psum(h @ w2, "model") + b2, mesh=mesh,
                       in_specs=(P(None, "model"), P("model", None), P()), out_specs=P())

    def prog(x, w1, b1, w2, b2):
        h = l1(x, w1, b1)
        return l2(h, w2, b2), h
    return jax.jit(prog)
