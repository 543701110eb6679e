"""ring-allreduce wrong-workers-saturate-blocks: the naive ring, but every device except device 0
saturates each arriving block at +-256 ("overflow guard") before adding it. The cases' blocks are
under 20, so every replica agrees there; with larger values devices 1..7 hold a wrong sum
(check_vma=False: JAX keeps device 0's)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    guard = jax.lax.axis_index("ring") != 0
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + jnp.where(guard, jnp.clip(cur, -256.0, 256.0), cur)
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
