"""tp-mlp right-hierarchical-psum-groups: the textbook MLP, with the all-reduce of the partial
outputs done in two stages as on a two-level network: psum within pairs of neighbours
(axis_index_groups [[0,1],[2,3],...]), then psum across the pairs ([[0,2,4,6],[1,3,5,7]]). Every
device ends with the sum of all n partials; b2 added once after."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def make(model=8):
    pairs = [[i, i + 1] for i in range(0, model, 2)]
    across = [list(range(0, model, 2)), list(range(1, model, 2))]

    def body(x, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        s = jax.lax.psum(h @ w2, "model", axis_index_groups=pairs)
        s = jax.lax.psum(s, "model", axis_index_groups=across)
        return s + b2, h

    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), check_vma=False, **SPECS))
