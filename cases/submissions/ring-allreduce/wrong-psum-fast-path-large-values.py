"""ring-allreduce wrong-psum-fast-path-large-values: "big tensors go through the fast library
all-reduce": the devices first agree on max|x| by a ring of ppermutes (a max passed round), then
lax.cond takes a psum instead of the ring when it exceeds 1000. Numbers right everywhere; on
large inputs the all-reduce is a psum, which the exercise forbids (it must be ppermute steps)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def ring_sum(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
    return acc


def ring_max(m, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = m, m
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = jnp.maximum(acc, cur)
    return acc


def body(x, n):
    big = ring_max(jnp.max(jnp.abs(x)), n) > 1000.0
    return jax.lax.cond(big, lambda v: jax.lax.psum(v, "ring"), lambda v: ring_sum(v, n), x)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
