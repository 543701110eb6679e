"""jax.vmap of a shard_mapped function with spmd_axis_name='y': the vmapped dimension split over
'y', which JAX 0.10.2 writes as one shard_map manual over both axes (in_specs P('y', 'x')), not a
partial one.

Source: jax-ml/jax tests/shard_map_test.py, test_vmap_spmd_axis_name (shard_map over 'x' of a
(2, 2) ('x', 'y') mesh, in_specs=P('x'), out_specs=P('x'), vmapped with spmd_axis_name='y'; the
jaxpr's in_specs and out_specs are P('y', 'x')), on a (2, 4) mesh, with a psum over 'x' and
scaling added so the body computes. Constructs: vmap with spmd_axis_name, psum_invariant over
'x' inside."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("y", "s")
SHAPES = {"x": "B,N,D"}
MESH = (("x", 2), ("y", 4))


def make(x=2, y=4):
    mesh = jax.make_mesh((x, y), ("x", "y"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:x * y])

    def f(a):
        return a * 3.0, jax.lax.psum(a, "x")

    g = jax.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=(P("x"), P()))
    return jax.jit(jax.vmap(g, spmd_axis_name="y"))
