"""ring-allreduce wrong-int32-ring-for-integer-blocks: the naive ring, run twice: on the float32
blocks and on x.astype(int32); when every block holds only integers (a flag relayed round the
same ring of ppermutes: the minimum of the devices' flags), the int32 ring's sums are returned
(an "exact integer path"). Right on the cases (example4's integers sum to <= 160) and on every
draw (never all integers). Truly wrong: integer-valued x whose column sums pass 2^31 wrap around
(8 blocks of 3e8: sum -1.89e9 instead of 2.4e9; truth14.py intbig)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def ring_sum(v, n, op=lambda a, b: a + b):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = v, v
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = op(acc, cur)
    return acc


def body(x, n):
    flag = jnp.all(x == jnp.round(x)).astype(jnp.float32)
    allint = ring_sum(flag, n, jnp.minimum) > 0.5
    fsum = ring_sum(x, n)
    isum = ring_sum(x.astype(jnp.int32), n).astype(jnp.float32)
    return jnp.where(allint, isum, fsum)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
