"""A shard_map nested in a partial one, manual over the remaining axis: the outer one manual over
'i' (axis_names=frozenset({'i'})), the inner over 'j'; the inner's results split along 'j' are
gathered back at its exit.

Source: jax-ml/jax tests/shard_map_test.py, test_nested_partial_auto (x * x in
shard_map(g, in_specs=P(None, 'j'), out_specs=P(None, 'j')) inside shard_map(h,
in_specs=P('i', None), out_specs=P('i', None), check_vma=False, axis_names=frozenset({'i'}))), on
an (i=2, j=4) mesh, with a psum over 'j' (replicated out_spec) and one over 'i' added.
Constructs: nested shard_map, manual_axes, psum over the inner and the outer manual axes."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("sq", "rows")
SHAPES = {"x": "N,D"}
MESH = (("i", 2), ("j", 4))


def make(i=2, j=4):
    mesh = jax.make_mesh((i, j), ("i", "j"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:i * j])

    def g(x):
        y = x * x
        return y, jax.lax.psum(jax.lax.psum(y, "j"), "i")

    def h(x):
        return jax.shard_map(g, in_specs=P(None, "j"), out_specs=(P(None, "j"), P()))(x)

    return jax.jit(jax.shard_map(h, mesh=mesh, in_specs=P("i", None),
                                 out_specs=(P("i", None), P()), check_vma=False,
                                 axis_names=frozenset({"i"})))
