"""lax.while_loop in a shard_map body: the carries rotate (as in the test) and the loop runs
until a psum'd norm falls below a bound or 20 steps have run, so the predicate is the same on
every device.

Source: jax-ml/jax tests/shard_map_test.py, test_while_rep_rule (the rotating carries
`i, c, *cs -> i + 1, *cs, c` with pcast'd values inside shard_map), with a data-dependent stop.
Constructs: while (cond consts, body consts, carries), psum in the predicate, pcast."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x", "y", "z", "bound")
OUTPUTS = ("steps", "x", "y", "z")
SHAPES = {"x": "N", "y": "N", "z": "N", "bound": ""}
MESH = (("data", 8),)


def body(x, y, z, bound):
    def cond(c):
        i, a, b, d = c
        total = jax.lax.psum(jnp.sum(a * a), "data")
        return (i < 20) & (total > bound)

    def step(c):
        i, a, b, d = c
        return i + 1, b * 0.5, d, a

    i, a, b, d = jax.lax.while_loop(cond, step, (jnp.int32(0), x, y, z))
    return i, a, b, d


def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:data])
    return jax.jit(jax.shard_map(body, mesh=mesh,
                                 in_specs=(P("data"), P("data"), P("data"), P()),
                                 out_specs=(P(), P("data"), P("data"), P("data"))))
