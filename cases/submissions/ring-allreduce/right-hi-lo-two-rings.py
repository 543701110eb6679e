"""ring-allreduce, RIGHT (unusual): each device splits its block into hi = reduce_precision(x, 8, 10) and lo = x - hi and runs two naive rings side by side (n - 1 neighbour ppermutes each, hi to the right, lo to the left), adding each piece as it passes; the result is the hi sum plus the lo sum. Only neighbour ppermutes; no device keeps another device's block."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(n, x):
    right = [(i, (i + 1) % n) for i in range(n)]; left = [(i, (i - 1) % n) for i in range(n)]
    hi = jax.lax.reduce_precision(x, exponent_bits=8, mantissa_bits=10)
    ah, ch = hi, hi
    al = cl = x - hi
    for _ in range(n - 1):
        ch = jax.lax.ppermute(ch, "ring", right); ah = ah + ch
        cl = jax.lax.ppermute(cl, "ring", left); al = al + cl
    return ah + al


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(ring, x), mesh=mesh_of(ring), in_specs=P("ring", None),
                                 out_specs=P(), check_vma=False))
