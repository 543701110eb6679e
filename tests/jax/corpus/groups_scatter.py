"""psum_scatter with axis_index_groups over three axes: the sums of the even and of the odd
columns, scattered over each subgroup of four.

Source: jax-ml/jax tests/shard_map_test.py, test_reduce_scatter_with_axis_index_groups (mesh
(x=2, y=2, z=2), a split P(None, ('x', 'y', 'z')), lax.psum_scatter(a, ('x', 'y', 'z'),
scatter_dimension=0, axis_index_groups=((0, 2, 4, 6), (1, 3, 5, 7)), tiled=True)); the second
lists the same subgroups out of order, ((6, 0, 4, 2), (3, 5, 1, 7)): the sum folds in the listed
order (float32 bits differ from the first's), each member's block is its listed position's.
Constructs: psum_scatter (reduce_scatter) with axis_index_groups."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("a",)
OUTPUTS = ("sums", "reordered")
SHAPES = {"a": "N,C"}
MESH = (("x", 2), ("y", 2), ("z", 2))


def body(a):
    axes = ("x", "y", "z")
    sums = jax.lax.psum_scatter(a, axes, scatter_dimension=0,
                                axis_index_groups=((0, 2, 4, 6), (1, 3, 5, 7)), tiled=True)
    reordered = jax.lax.psum_scatter(a, axes, scatter_dimension=0,
                                     axis_index_groups=((6, 0, 4, 2), (3, 5, 1, 7)), tiled=True)
    return sums, reordered


def make(x=2, y=2, z=2):
    mesh = jax.make_mesh((x, y, z), ("x", "y", "z"), axis_types=(AxisType.Auto,) * 3,
                         devices=jax.devices()[:x * y * z])
    spec = P(None, ("x", "y", "z"))
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=(spec, spec)))
