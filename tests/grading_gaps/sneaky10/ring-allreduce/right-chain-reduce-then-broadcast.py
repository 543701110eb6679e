"""ring-allreduce, RIGHT (reduce then broadcast along the ring): n - 1 steps pass a running partial
sum rightwards along the chain 0 -> 1 -> ... -> n-1 (device k adds its block to what arrives), so
device n - 1 ends with the total; n - 1 more steps pass the total on round the ring
(n-1 -> 0 -> 1 -> ...), each device keeping it. Every collective is a ppermute to the right
neighbour; no device ever holds another's raw block beside its own."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(ring=8):
    n = ring
    right = [(i, (i + 1) % n) for i in range(n)]

    def body(x):
        me = jax.lax.axis_index("ring")
        part = x
        for k in range(1, n):
            got = jax.lax.ppermute(part, "ring", right)
            part = jnp.where(me == k, got + x, part)
        total = part
        for k in range(n - 1):
            got = jax.lax.ppermute(total, "ring", right)
            total = jnp.where(me == k, got, total)
        return total

    return jax.jit(jax.shard_map(body, mesh=mesh_of(n), in_specs=P("ring", None), out_specs=P(),
                                 check_vma=False))
