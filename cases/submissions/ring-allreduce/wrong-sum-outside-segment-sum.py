"""ring-allreduce, wrong (cheat, right numbers): the sum is computed OUTSIDE the shard_map on the
whole x by jax.ops.segment_sum (row r of x into segment r mod B: a scatter-add of every block on
one device). The sum is handed to the shard_map as a replicated operand, which only runs a decoy ring of
ppermutes whose result is multiplied by 0 and added. No device adds blocks as they pass; one place holds all of x and reduces it."""
import jax, jax.numpy as jnp
from jax.sharding import PartitionSpec as P, AxisType

def make(ring):
    mesh = jax.make_mesh((ring,), ("ring",), axis_types=(AxisType.Auto,))
    perm = [(i, (i + 1) % ring) for i in range(ring)]
    def body(s, x):
        acc = x; buf = x
        for _ in range(ring - 1):
            buf = jax.lax.ppermute(jnp.sin(buf), "ring", perm)
            acc = acc + buf
        return s + 0.0 * acc
    sm = jax.shard_map(body, mesh=mesh, in_specs=(P(), P("ring", None)), out_specs=P(), check_vma=False)
    def f(x):
        B = x.shape[0] // ring
        seg = jnp.arange(x.shape[0], dtype=jnp.int32) % B
        return sm(jax.ops.segment_sum(x, seg, num_segments=B), x)
    return jax.jit(f)
