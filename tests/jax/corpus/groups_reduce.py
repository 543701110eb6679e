"""psum, pmean, pmax and pmin with axis_index_groups, f32 and int32, subgroups listed out of rank
order.

Source: jax-ml/jax tests/shard_map_test.py, test_pmax and test_pmin (x split over 'i', pmax /
pmin over it), with the axis_index_groups of jax.lax.psum's documented example
(axis_index_groups=[[0, 1], [2, 3]], jax/_src/lax/parallel.py) on shard_map; psum and pmean under
check_vma=False, as JAX 0.10.2 raises NotImplementedError for a psum with groups under
check_vma=True (psum_invariant). The psum's subgroups of four are listed out of order
((6, 0, 3, 5), (1, 7, 2, 4)): the sum folds in the listed order. Constructs: psum, pmean (psum
and a division), pmax, pmin with axis_index_groups; psum of int32."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x", "k")
OUTPUTS = ("sum", "mean", "max", "min", "isum")
SHAPES = {"x": "N,D", "k": "N,D"}
DTYPES = {"k": "i32"}
INTS = {"k": (-50, 50)}
MESH = (("i", 8),)

FOURS = ((6, 0, 3, 5), (1, 7, 2, 4))
PAIRS = ((1, 0), (3, 2), (5, 4), (7, 6))


def body(x, k):
    return (jax.lax.psum(x, "i", axis_index_groups=FOURS),
            jax.lax.pmean(x, "i", axis_index_groups=PAIRS),
            jax.lax.pmax(x, "i", axis_index_groups=PAIRS),
            jax.lax.pmin(x, "i", axis_index_groups=FOURS),
            jax.lax.psum(k, "i", axis_index_groups=FOURS))


def make(i=8):
    mesh = jax.make_mesh((i,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:i])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("i"), P("i")),
                                 out_specs=(P("i"),) * 5, check_vma=False))
