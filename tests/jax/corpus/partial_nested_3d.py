"""Nested partial shard_maps on a three-axis mesh: the outer manual over 'x', the inner over
'y', 'z' automatic in both, under check_vma=True.

Source: jax-ml/jax tests/shard_map_test.py, test_nested_partial_auto_1d, its case '0'
(dim1='x', dim2='y': shard_map(h, in_specs=P('x', None), out_specs=P('x', None),
axis_names={'x'}) holding shard_map(g, in_specs=P(None, 'y'), out_specs=P(None, 'y'),
axis_names={'y'}), g = x * x, on a (2, 2, 2) ('x', 'y', 'z') mesh), with axis_index over both
manual axes added in the inner body. Constructs: nested partial shard_maps, an automatic axis in
both, axis_index inside the inner."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("y",)
SHAPES = {"x": "N,D"}
MESH = (("x", 2), ("y", 2), ("z", 2))


def make(x=2, y=2, z=2):
    mesh = jax.make_mesh((x, y, z), ("x", "y", "z"), axis_types=(AxisType.Auto,) * 3,
                         devices=jax.devices()[:x * y * z])

    def g(a):
        k = jax.lax.axis_index("x") * 10 + jax.lax.axis_index("y")
        return a * a + k.astype(jnp.float32)

    def h(a):
        return jax.shard_map(g, in_specs=P(None, "y"), out_specs=P(None, "y"),
                             axis_names={"y"})(a)

    return jax.jit(jax.shard_map(h, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None),
                                 axis_names={"x"}))
