"""pmax and pmin over the mesh axis, and all_gather(..., to='invarying') (JAX 0.10.2's
all_gather_invariant).

Source: jax-ml/jax tests/shard_map_test.py, test_pmax and test_pmin (x = arange(8.) split over
'i', out_specs P()), test_all_gather_invariant_basic. Constructs: pmax, pmin,
all_gather_invariant."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("max", "min", "gathered")
SHAPES = {"x": "N,D"}
MESH = (("i", 8),)


def body(x):
    return (jax.lax.pmax(x, "i"), jax.lax.pmin(x, "i"),
            jax.lax.all_gather(x, "i", tiled=True, to="invarying"))


def make(i=8):
    mesh = jax.make_mesh((i,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:i])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"),
                                 out_specs=(P(), P(), P())))
