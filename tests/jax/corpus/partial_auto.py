"""A shard_map manual over one axis of two (axis_names={'i'}), 'j' automatic: the body sees the
array whole along 'j', squares it, takes a sharding constraint over 'j' and sums over 'i'.

Source: jax-ml/jax tests/shard_map_test.py, test_partial_auto (x * x under
shard_map(..., in_specs=P('i', None), out_specs=P('i', None), axis_names=frozenset({'i'})) with a
with_sharding_constraint(x, P(None, 'j')) inside, on a ('i', 'j') mesh), with a psum over the
manual axis added (run within the devices that share their 'j' coordinate). Constructs: partial
manual shard_map (params.manual_axes), sharding_constraint over an automatic axis, psum over the
manual axis, an out_spec replicated over the manual axis."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("sq", "total")
SHAPES = {"x": "N,D"}
MESH = (("i", 2), ("j", 4))


def make(i=2, j=4):
    mesh = jax.make_mesh((i, j), ("i", "j"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:i * j])

    def g(x):
        x = jax.lax.with_sharding_constraint(x, P(None, "j"))
        y = x * x
        return y, jax.lax.psum(y, "i")

    return jax.jit(jax.shard_map(g, mesh=mesh, in_specs=P("i", None),
                                 out_specs=(P("i", None), P()), axis_names=frozenset({"i"})))
