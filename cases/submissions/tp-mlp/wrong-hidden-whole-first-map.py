"""tp-mlp, wrong (issue #47.4): hidden all_gather'ed whole in a first shard_map and returned so
(out_specs P()), the output computed in a second: hidden is not left split."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(model=8):
    mesh = mesh_of(model)

    def hidden(x, w1, b1):
        h = jax.nn.relu(x @ w1 + b1)
        return jax.lax.all_gather(h, "model", axis=1, tiled=True)

    first = jax.shard_map(hidden, mesh=mesh, in_specs=(P(), P(None, "model"), P("model")),
                          out_specs=P(), check_vma=False)

    def out(h_full, w2, b2):
        cols = w2.shape[0]
        i = jax.lax.axis_index("model")
        h = jax.lax.dynamic_slice_in_dim(h_full, i * cols, cols, axis=1)
        return jax.lax.psum(h @ w2, "model") + b2

    second = jax.shard_map(out, mesh=mesh, in_specs=(P(), P("model", None), P()), out_specs=P())

    @jax.jit
    def program(x, w1, b1, w2, b2):
        h = first(x, w1, b1)
        return second(h, w2, b2), h

    return program
