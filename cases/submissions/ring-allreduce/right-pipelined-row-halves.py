"""ring-allreduce, RIGHT (pipelined, two directions by rows): each device's block is cut into its first ceil(B/2) rows and the rest; the first part goes round the ring to the right and the second to the left, each for n - 1 neighbour ppermutes, every device adding each part as it passes; the two summed parts are joined back. (A block of one row has an empty second part, which simply travels nowhere useful.) Only neighbour ppermutes; the sum on every device."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(ring=8):
    n = ring
    right = [(i, (i + 1) % n) for i in range(n)]
    left = [(i, (i - 1) % n) for i in range(n)]

    def body(x):
        k = -(-x.shape[0] // 2)
        a, b = x[:k], x[k:]
        sa, sb, ca, cb = a, b, a, b
        for _ in range(n - 1):
            ca = jax.lax.ppermute(ca, "ring", right); sa = sa + ca
            cb = jax.lax.ppermute(cb, "ring", left); sb = sb + cb
        return jnp.concatenate([sa, sb], axis=0)

    return jax.jit(jax.shard_map(body, mesh=mesh_of(n), in_specs=P("ring", None), out_specs=P(),
                                 check_vma=False))
