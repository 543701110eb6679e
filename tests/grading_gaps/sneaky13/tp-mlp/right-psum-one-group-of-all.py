"""tp-mlp right-psum-one-group-of-all: textbook TP MLP whose psum names axis_index_groups
explicitly as one group of every device (a helper that supports sub-groups, called with the
whole axis)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(model=8):
    groups = [list(range(model))]

    def body(x, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        return jax.lax.psum(h @ w2, "model", axis_index_groups=groups) + b2, h

    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
