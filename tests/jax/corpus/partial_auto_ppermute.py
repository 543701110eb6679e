"""ppermute and axis_index over the manual axis of a partial shard_map (axis_names={'i'}, 'j'
automatic), under check_vma=False.

Source: jax-ml/jax tests/shard_map_test.py, test_partial_auto_ppermute (ppermute over 'i' with
perm [(0, 1), (1, 2), (2, 3), (3, 0)] on a (4, 2) ('i', 'j') mesh, a sharding constraint over 'j'
inside) and test_partial_auto_axis_index (axis_index('i') under axis_names=frozenset({'i'}),
check_vma=False), the index added to the block so that it has an input. Constructs: partial manual
shard_map, ppermute and axis_index on the manual axis, int32 result."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("shifted", "index")
SHAPES = {"x": "N"}
MESH = (("i", 4), ("j", 2))


def make(i=4, j=2):
    mesh = jax.make_mesh((i, j), ("i", "j"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:i * j])

    def g(x):
        x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P("j")))
        k = jax.lax.axis_index("i")
        return (jax.lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
                jnp.zeros(x.shape, jnp.int32) + k)

    return jax.jit(jax.shard_map(g, mesh=mesh, in_specs=P("i"), out_specs=(P("i"), P("i")),
                                 check_vma=False, axis_names=frozenset({"i"})))
