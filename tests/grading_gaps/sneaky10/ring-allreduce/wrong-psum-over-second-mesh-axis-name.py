"""ring-allreduce, WRONG: the sum is a psum -- run in a second shard_map over a second mesh of the
same 8 devices whose axis is named 'other', not 'ring'; the first shard_map (over 'ring') only runs
a decoy ring (each block passed round the ring n - 1 times and thrown away but for a 0 * term) and
hands the blocks back split. Only collectives over 'ring' are checked to be ppermutes."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def make(ring=8):
    n = ring
    devs = jax.devices()[:n]
    mesh_r = jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=devs)
    mesh_o = jax.make_mesh((n,), ("other",), axis_types=(AxisType.Auto,), devices=devs)
    right = [(i, (i + 1) % n) for i in range(n)]

    def body1(x):
        cur, junk = x, jnp.zeros_like(x)
        for _ in range(n - 1):
            cur = jax.lax.ppermute(cur, "ring", right)
            junk = junk + cur
        return x + 0.0 * junk

    def body2(xb):
        return jax.lax.psum(xb, "other")

    sm1 = jax.shard_map(body1, mesh=mesh_r, in_specs=P("ring", None), out_specs=P("ring", None),
                        check_vma=False)
    sm2 = jax.shard_map(body2, mesh=mesh_o, in_specs=P("other", None), out_specs=P(),
                        check_vma=False)
    return jax.jit(lambda x: sm2(sm1(x)))
