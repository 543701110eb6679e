"""ring-allreduce, WRONG (gathers, then sums): the raw blocks are passed round the ring unsummed (like the
naive ring's `cur`), but each arriving block is written into slot k of an (n, B, D) buffer that is kept
MIXED: the buffer is stored as H @ slots (a Sylvester-Hadamard matrix over the slot axis), so adding
block k adds H[:, k] (x) block to every slot. Every device thus keeps all n blocks in one value (n B D
numbers, recoverable by H^T / n) but no slot is a function of one block; at the end slot 0 of the mixed
buffer, which is H[0, :] . slots = the plain sum, is returned. No device adds the blocks as they pass."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def hadamard(n):
    k = jax.lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n, n), 1)
    return 1.0 - 2.0 * (jax.lax.population_count(k & j) & 1).astype(jnp.float32)


def body(x, n):
    H = hadamard(n)
    right = [(i, (i + 1) % n) for i in range(n)]
    buf = H[:, 0][:, None, None] * x[None]             # my block in slot 0, mixed
    cur = x
    for k in range(1, n):
        cur = jax.lax.ppermute(cur, "ring", right)       # raw block of device i - k
        buf = buf + H[:, k][:, None, None] * cur[None]   # into slot k, mixed
    return buf[0]                                        # row 0 of H is all ones: the sum of the slots


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
