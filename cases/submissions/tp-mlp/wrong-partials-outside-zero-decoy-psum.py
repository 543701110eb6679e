"""tp-mlp, WRONG: each device computes its hidden block and its (B, O) partial output legitimately,
but the reduction is not done on the mesh: the body psums 0 * partial over 'model' (a decoy that
passes a full block to a collective), returns the partials stacked (out_specs P('model')), and
they are added up OUTSIDE the shard_map with jnp.sum (plus the decoy, which is zero)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2):
    h = jax.nn.relu(x @ w1 + b1)
    part = h @ w2
    decoy = jax.lax.psum(0.0 * part, "model")
    return part[None], decoy, h


def make(model=8):
    sm = jax.shard_map(body, mesh=mesh_of(model),
                       in_specs=(P(), P(None, "model"), P("model"), P("model", None)),
                       out_specs=(P("model"), P(), P(None, "model")), check_vma=False)

    def f(x, w1, b1, w2, b2):
        parts, decoy, h = sm(x, w1, b1, w2)
        return jnp.sum(parts, axis=0) + decoy + b2, h
    return jax.jit(f)
