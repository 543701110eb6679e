"""ring-allreduce, WRONG (the sum outside the mesh, in two halves): OUTSIDE every shard_map, on one
device, the blocks of the first half of the devices are summed by one reduction and those of the
second half by another (no reduction or add ever combines all of x); the two half-sums are handed
replicated to the shard_map, whose devices add them and run a decoy ring step (a ppermute of the
half-sum to the right neighbour, multiplied by 0). No block is summed by the ring."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(ring=8):
    n = ring
    right = [(i, (i + 1) % n) for i in range(n)]

    def body(s1, s2):
        t = s1 + s2
        return t + 0.0 * jax.lax.ppermute(t, "ring", right)

    sm = jax.shard_map(body, mesh=mesh_of(n), in_specs=(P(), P()), out_specs=P(), check_vma=False)

    def f(x):
        b, D = x.shape[0] // n, x.shape[1]
        blocks = x.reshape(n, b, D)
        return sm(jnp.sum(blocks[: n // 2], axis=0), jnp.sum(blocks[n // 2:], axis=0))
    return jax.jit(f)
