"""all_gather with axis_index_groups over a tuple of axes, tiled along the last dimension, and
untiled with subgroups listed out of rank order.

Source: jax-ml/jax tests/shard_map_test.py, test_all_gather_with_axis_index_groups (mesh
(x=2, y=2, z=2), a split P('x', ('y', 'z')), lax.all_gather(a, ('y', 'z'),
axis_index_groups=((0, 1), (2, 3)), axis=-1, tiled=True), out_specs P('x', ('y', 'z'))); the
second gather lists its subgroups as ((3, 0), (2, 1)), which orders the stacked blocks by the
listed position. Constructs: all_gather with axis_index_groups, tiled and untiled."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("a",)
OUTPUTS = ("tiled", "stacked")
SHAPES = {"a": "N,C"}
MESH = (("x", 2), ("y", 2), ("z", 2))


def body(a):
    tiled = jax.lax.all_gather(a, ("y", "z"), axis_index_groups=((0, 1), (2, 3)), axis=-1,
                               tiled=True)
    stacked = jax.lax.all_gather(a, ("y", "z"), axis_index_groups=((3, 0), (2, 1)), axis=0)
    return tiled, stacked


def make(x=2, y=2, z=2):
    mesh = jax.make_mesh((x, y, z), ("x", "y", "z"), axis_types=(AxisType.Auto,) * 3,
                         devices=jax.devices()[:x * y * z])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x", ("y", "z")),
                                 out_specs=(P("x", ("y", "z")), P(None, "x", ("y", "z")))))
