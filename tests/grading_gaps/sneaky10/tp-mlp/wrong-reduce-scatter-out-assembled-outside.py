"""tp-mlp, WRONG (out never replicated): each device computes its hidden block and partial output,
and the partials are psum_scatter'ed over 'model' (a reduce-scatter: each device ends with 1/n of
the summed out); the all-gather half of the all-reduce is never run on the mesh -- the chunks are
returned split (out_specs P('model')) and stitched together OUTSIDE the shard_map by a reshape,
b2 added there. No device ever holds the finished out."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(model=8):
    n = model

    def body(x, w1, b1, w2):
        h = jax.nn.relu(x @ w1 + b1)
        flat = (h @ w2).reshape(-1)
        pad = (-flat.shape[0]) % n
        flat = jnp.pad(flat, (0, pad))
        return jax.lax.psum_scatter(flat, "model", tiled=True), h

    sm = jax.shard_map(body, mesh=mesh_of(n),
                       in_specs=(P(), P(None, "model"), P("model"), P("model", None)),
                       out_specs=(P("model"), P(None, "model")))

    def f(x, w1, b1, w2, b2):
        chunks, h = sm(x, w1, b1, w2)
        B, O = x.shape[0], w2.shape[1]
        return chunks[:B * O].reshape(B, O) + b2, h
    return jax.jit(f)
