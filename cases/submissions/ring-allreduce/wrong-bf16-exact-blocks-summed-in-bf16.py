"""ring-allreduce, WRONG (numerically): a bandwidth "optimisation". When every device's block is
exactly representable in bfloat16 (a model trained in bf16 and kept in float32 containers, small
integers...), the ring is run in bfloat16 -- sending bf16 loses nothing for such blocks -- but it
also accumulates in bfloat16, so every partial sum is rounded to 8 significant bits. Otherwise the
float32 naive ring. The flag "every block is bf16-exact" is the AND of the devices' flags, carried
round the ring by ppermute (a min of 0/1), so every device takes the same path.

Why it is wrong: bf16-exact blocks whose sums need more than 8 bits (1.0078125 + 2.015625 +
...) are rounded: truth15.py bf16 (blocks drawn as bf16 numbers) puts 20 of the 24 elements of
out outside the tolerance, off by up to 0.027 (the gallery's right.py: exact). Why the grader misses it: no draw is bf16-exact (23 random
fraction bits; the whole numbers of 2^27..2^29 have up to 29 significant bits), and the one case
that is (example4, integers of at most 20) has every partial sum an integer under 256, exact in
bf16."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def naive_ring(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
    return acc


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    xb = x.astype(jnp.bfloat16)
    flag = jnp.all(xb.astype(jnp.float32) == x).astype(jnp.float32)
    cur = flag
    for _ in range(n - 1):  # AND of the flags round the ring
        cur = jax.lax.ppermute(cur, "ring", right)
        flag = jnp.minimum(flag, cur)
    fast = naive_ring(xb, n).astype(jnp.float32)
    slow = naive_ring(x, n)
    return jnp.where(flag > 0, fast, slow)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
