"""all_to_all with axis_index_groups: each subgroup of two exchanges a quadrant.

Source: jax-ml/jax tests/shard_map_test.py, test_all_to_all_with_axis_index_groups (mesh
(x=4,), a split P('x', None), lax.all_to_all(a, 'x', split_axis=1, concat_axis=0,
axis_index_groups=((0, 1), (2, 3)), tiled=True), out_specs P(None, 'x')); the second lists each
subgroup backwards, ((1, 0), (3, 2)): chunk j goes to the subgroup's j-th listed member.
Constructs: all_to_all with axis_index_groups."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("a",)
OUTPUTS = ("quadrants", "swapped")
SHAPES = {"a": "N,C"}
MESH = (("x", 4),)


def body(a):
    quadrants = jax.lax.all_to_all(a, "x", split_axis=1, concat_axis=0,
                                   axis_index_groups=((0, 1), (2, 3)), tiled=True)
    swapped = jax.lax.all_to_all(a, "x", split_axis=1, concat_axis=0,
                                 axis_index_groups=((1, 0), (3, 2)), tiled=True)
    return quadrants, swapped


def make(x=4):
    mesh = jax.make_mesh((x,), ("x",), axis_types=(AxisType.Auto,), devices=jax.devices()[:x])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x", None),
                                 out_specs=(P(None, "x"), P(None, "x"))))
