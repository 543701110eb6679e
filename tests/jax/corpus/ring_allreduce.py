"""A ring all-reduce written with fori_loop and ppermute: a reduce-scatter (each step passes
a partial sum one device down the ring and adds the local chunk) then an all-gather, both
loops fori_loops.

Source: jax-ml/jax docs/notebooks/shard_map.md, "Collectives tutorial" / "ppermute"
(psum_scatter in terms of ppermute, "the reverse" for all_gather), with fori_loops in place of
the Python loops. Constructs: fori_loop (static) -> scan, ppermute, axis_index, dynamic_slice,
dynamic_update_slice."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("sum",)
SHAPES = {"x": "R,C"}
MESH = (("ring", 8),)


def body(x):
    # x: [R/8, C] per device; C divisible by 8: chunk j is columns j*C/8 .. (j+1)*C/8
    size = jax.lax.axis_size("ring")
    idx = jax.lax.axis_index("ring")
    c = x.shape[1] // size
    x = jnp.sum(x, axis=0)  # each device contributes its rows' sum: a vector of C
    down = [(j, (j - 1) % size) for j in range(size)]

    def chunk(v, j):
        return jax.lax.dynamic_slice(v, (j * c,), (c,))

    def rs(i, acc):  # after size-1 steps device idx holds the total of chunk (idx + 1) % size
        acc = jax.lax.ppermute(acc, "ring", down)
        return acc + chunk(x, (idx + i + 1) % size)
    acc = jax.lax.fori_loop(1, size, rs, chunk(x, (idx + 1) % size))
    own = (idx + size) % size  # chunk index this device now holds fully summed
    out = jnp.zeros_like(x)
    out = jax.lax.dynamic_update_slice(out, acc, (own * c,))

    def ag(i, carry):
        out, blk = carry
        blk = jax.lax.ppermute(blk, "ring", down)
        j = (idx + i) % size
        return jax.lax.dynamic_update_slice(out, blk, (j * c,)), blk
    out, _ = jax.lax.fori_loop(1, size, ag, (out, acc))
    return out


def make(ring=8):
    mesh = jax.make_mesh((ring,), ("ring",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:ring])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("ring"), out_specs=P(),
                                 check_vma=False))
