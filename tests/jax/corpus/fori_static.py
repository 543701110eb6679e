"""A fori_loop with static bounds in a shard_map body (JAX writes it as a `scan` whose carry
holds the counter): a few steps of a row-split power iteration, each normalised by a psum.

Source: modelled on jax-ml/jax tests/shard_map_test.py, test_scan_rep_rule (a loop over carries
inside shard_map) and docs/notebooks/shard_map.md "Matrix multiplies" ("we could use
jax.lax.fori_loop"). Constructs: fori_loop (static) -> scan, psum, dot_general."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("a", "v")
OUTPUTS = ("v", "norm")
SHAPES = {"a": "N,N", "v": "N"}
MESH = (("data", 8),)
STEPS = 4


def body(a_rows, v):
    # a_rows: this device's rows of A; v replicated. u = A v, all-gathered, normalised.
    def step(i, carry):
        v, _ = carry
        u_blk = a_rows @ v
        u = jax.lax.all_gather(u_blk, "data", tiled=True)
        n = jnp.sqrt(jnp.sum(u * u))
        return u / n, n
    return jax.lax.fori_loop(0, STEPS, step, (v, jnp.float32(0)))


def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:data])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("data"), P()),
                                 out_specs=(P(), P()), check_vma=False))
