"""tp-mlp, RIGHT (the bias trick): outside the shard_map x gets a column of ones and b1 is
appended to w1 as an extra row, (D + 1, H), split by hidden units over 'model' as w1 is; each
device computes its hidden block as [x, 1] @ [w1; b1]_blk, its partial output, psum over 'model',
b2 added once after."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(xa, wa, w2, b2):
    h = jax.nn.relu(xa @ wa)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    sm = jax.shard_map(body, mesh=mesh_of(model),
                       in_specs=(P(), P(None, "model"), P("model", None), P()),
                       out_specs=(P(), P(None, "model")))

    def f(x, w1, b1, w2, b2):
        xa = jnp.concatenate([x, jnp.ones((x.shape[0], 1), x.dtype)], axis=1)
        wa = jnp.concatenate([w1, b1[None, :]], axis=0)
        return sm(xa, wa, w2, b2)
    return jax.jit(f)
