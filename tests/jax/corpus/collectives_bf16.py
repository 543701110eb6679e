"""The collectives on bfloat16 over 8 devices (issue #49, dtypes): psum (XLA:CPU promotes the
all-reduce to float32 and converts the sum once), pmax, pmin, all_gather, ppermute and all_to_all
(values moved, not computed), on blocks of a bf16 array split over 'i'.

Source: jax-ml/jax tests/shard_map_test.py's test_psum / test_all_gather / test_ppermute shapes,
on bfloat16. Constructs: psum, pmax, pmin, all_gather_invariant, ppermute, all_to_all of bf16."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("sum", "max", "min", "gathered", "shifted", "swapped")
SHAPES = {"x": "N,D"}
DTYPES = {"x": "bf16"}
MESH = (("i", 8),)


def body(x):
    perm = [(j, (j + 1) % 8) for j in range(8)]
    return (lax.psum(x, "i"), lax.pmax(x, "i"), lax.pmin(x, "i"),
            lax.all_gather(x, "i", tiled=True, to="invarying"), lax.ppermute(x, "i", perm),
            lax.all_to_all(x, "i", 0, 0, tiled=True))


def make(i=8):
    mesh = jax.make_mesh((i,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:i])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"),
                                 out_specs=(P(), P(), P(), P(), P("i"), P("i"))))
