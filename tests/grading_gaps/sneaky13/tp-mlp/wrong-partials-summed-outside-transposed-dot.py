"""tp-mlp wrong-partials-summed-outside-transposed-dot: each device computes its hidden block and
partial output; a decoy psum of zeros runs over 'model'; the partials are returned stacked
(P('model')) and summed OUTSIDE as (ones(1, n) @ partials).T -- a product outside whose transpose
the evaluator folds into it -- then b2 added. The all-reduce is not done on the mesh."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2):
    h = jax.nn.relu(x @ w1 + b1)
    p = h @ w2
    p = p + jax.lax.psum(0.0 * p, "model")   # decoy
    return p.reshape(1, -1), h


def make(model=8):
    inner = jax.shard_map(body, mesh=mesh_of(model),
                          in_specs=(P(), P(None, "model"), P("model"), P("model", None)),
                          out_specs=(P("model", None), P(None, "model")), check_vma=False)

    def prog(x, w1, b1, w2, b2):
        parts, h = inner(x, w1, b1, w2)          # (n, B*O)
        tot = (jnp.ones((1, model), jnp.float32) @ parts).T   # (B*O, 1)
        return tot.reshape(x.shape[0], w2.shape[1]) + b2, h
    return jax.jit(prog)
