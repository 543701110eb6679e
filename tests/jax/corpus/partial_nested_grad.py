"""jax.grad through a shard_map nested in a partial one: the forward pass's residuals cross from
the forward shard_maps to the backward ones.

Source: jax-ml/jax tests/shard_map_test.py, test_grad_nested_partial_auto_with_residuals
(x * x * x in shard_map(g, in_specs=P(None, 'j'), out_specs=P(None, 'j')) inside
shard_map(h, in_specs=P('i', None), out_specs=P('i', None), check_vma=False,
axis_names=frozenset({'i'})), summed, jax.grad of it; the inner one, given no axis_names, is
manual over the axes not manual already, 'j'), on an (i=2, j=4) mesh. Constructs: grad of nested
partial shard_maps, residuals."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("dx",)
SHAPES = {"x": "N,D"}
MESH = (("i", 2), ("j", 4))


def make(i=2, j=4):
    mesh = jax.make_mesh((i, j), ("i", "j"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:i * j])

    def g(x):
        return x * x * x

    def h(x):
        return jax.shard_map(g, in_specs=P(None, "j"), out_specs=P(None, "j"))(x)

    def f(x):
        return jax.shard_map(h, mesh=mesh, in_specs=P("i", None), out_specs=P("i", None),
                             check_vma=False, axis_names=frozenset({"i"}))(x).sum()

    return jax.jit(jax.grad(f))
