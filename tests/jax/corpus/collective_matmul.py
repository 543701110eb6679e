"""Collective matmul, all-gather on one side: lhs split by rows over 'i', rhs split by columns;
instead of all-gathering lhs first, each step multiplies the lhs block at hand and passes it on
with ppermute, the steps in a fori_loop (a `scan`) so communication could overlap computation.

Source: jax-ml/jax docs/notebooks/shard_map.md, "Matrix multiplies" / "Example 1: all-gather on
one side" (collective_matmul_allgather_lhs_non_contracting; the tutorial notes the Python loop
could be a jax.lax.fori_loop, which this one is). Constructs: fori_loop (static) -> scan,
ppermute, axis_index, dynamic_update_slice."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("lhs", "rhs")
OUTPUTS = ("out",)
SHAPES = {"lhs": "M,K", "rhs": "K,F"}
MESH = (("i", 8),)


def body(lhs, rhs):
    # lhs: [M/8, K] (this device's rows), rhs: [K, F/8]; out block: [M, F/8]
    size = jax.lax.axis_size("i")
    idx = jax.lax.axis_index("i")
    perm = [(j, (j + 1) % size) for j in range(size)]
    rows = lhs.shape[0]
    out = jnp.zeros((rows * size, rhs.shape[1]), dtype=lhs.dtype)
    out = jax.lax.pcast(out, "i", to="varying")

    def step(k, carry):
        out, blk = carry
        src = (idx - k) % size  # whose rows blk holds after k shifts
        out = jax.lax.dynamic_update_slice(out, blk @ rhs, (src * rows, 0))
        return out, jax.lax.ppermute(blk, "i", perm)
    out, _ = jax.lax.fori_loop(0, size, step, (out, lhs))
    return out


def make(i=8):
    mesh = jax.make_mesh((i,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:i])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("i", None), P(None, "i")),
                                 out_specs=P(None, "i")))
