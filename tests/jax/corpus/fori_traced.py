"""A fori_loop whose trip count is an input (a traced i32 scalar): JAX writes it as a `while`
(cond_jaxpr i < n, body_jaxpr). Each step shifts every block one device along the ring and adds.

Source: modelled on jax-ml/jax tests/shard_map_test.py, test_while_rep_rule (a while_loop with
a counter in its carry inside shard_map) and docs/notebooks/shard_map.md "ppermute".
Constructs: fori_loop (traced bounds) -> while, ppermute, i32 input."""
import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x", "n")
OUTPUTS = ("y",)
SHAPES = {"x": "N,D", "n": ""}
DTYPES = {"n": "i32"}
INTS = {"n": (0, 8)}
MESH = (("ring", 8),)


def body(x, n):
    size = jax.lax.axis_size("ring")
    perm = [(i, (i + 1) % size) for i in range(size)]

    def step(i, acc):
        return acc + jax.lax.ppermute(acc, "ring", perm) * 0.5
    return jax.lax.fori_loop(0, n, step, x)


def make(ring=8):
    mesh = jax.make_mesh((ring,), ("ring",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:ring])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("ring"), P()),
                                 out_specs=P("ring")))
