"""ring-allreduce, RIGHT (two directions, uneven): each device's block travels 4 hops to the right and 3 hops to the left (two relays of neighbour ppermutes, one per direction), so every device receives each of the other n - 1 blocks exactly once -- from its left neighbours i-1..i-4 on the right-moving relay and its right neighbours i+1..i+3 on the left-moving one -- and adds them as they arrive. Only neighbour ppermutes; the sum on every device."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(ring=8):
    n = ring
    right = [(i, (i + 1) % n) for i in range(n)]
    left = [(i, (i - 1) % n) for i in range(n)]
    nr = n // 2; nl = n - 1 - nr

    def body(x):
        acc, r, l = x, x, x
        for _ in range(nr):
            r = jax.lax.ppermute(r, "ring", right)
            acc = acc + r
        for _ in range(nl):
            l = jax.lax.ppermute(l, "ring", left)
            acc = acc + l
        return acc

    return jax.jit(jax.shard_map(body, mesh=mesh_of(n), in_specs=P("ring", None), out_specs=P(),
                                 check_vma=False))
