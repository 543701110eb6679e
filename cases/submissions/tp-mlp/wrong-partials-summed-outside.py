"""tp-mlp, WRONG (skips the psum): each device computes its hidden block and its (B, O) partial output legitimately, but the 'psum over model' is run with axis_index_groups of one device each (it adds nothing), the partials are returned stacked (out_specs P('model')) and added up OUTSIDE the shard_map with jnp.sum, b2 added there. The reduction the exercise is about runs on one device outside the mesh."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(n, x, w1, b1, w2):
    h = jax.nn.relu(x @ w1 + b1)
    part = jax.lax.psum(h @ w2, "model", axis_index_groups=[[k] for k in range(n)])
    return part[None], h


def make(model=8):
    sm = jax.shard_map(lambda *a: body(model, *a), mesh=mesh_of(model),
                       in_specs=(P(), P(None, "model"), P("model"), P("model", None)),
                       out_specs=(P("model"), P(None, "model")), check_vma=False)

    def f(x, w1, b1, w2, b2):
        parts, h = sm(x, w1, b1, w2)
        return jnp.sum(parts, axis=0) + b2, h
    return jax.jit(f)
