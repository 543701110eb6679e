"""ring-allreduce, RIGHT (compensated): the reference's naive ring -- n - 1 times pass the block
last received to the right neighbour and add what arrives from the left -- with the running sum
kept by Kahan summation (a compensation term per element carries the rounding error of each add).
Every collective is a ppermute to the right neighbour."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(ring=8):
    n = ring
    right = [(i, (i + 1) % n) for i in range(n)]

    def body(x):
        acc, c, cur = x, jnp.zeros_like(x), x
        for _ in range(n - 1):
            cur = jax.lax.ppermute(cur, "ring", right)
            yv = cur - c
            t = acc + yv
            c = (t - acc) - yv
            acc = t
        return acc

    return jax.jit(jax.shard_map(body, mesh=mesh_of(n), in_specs=P("ring", None), out_specs=P(),
                                 check_vma=False))
