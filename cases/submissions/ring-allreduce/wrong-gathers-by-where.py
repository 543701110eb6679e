"""ring-allreduce, wrong: the blocks kept as they pass in an (n, rows, D) buffer by jnp.where on
a one-hot of the sender's index, then summed: right numbers, every device holds all of x."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    me = jax.lax.axis_index("ring")
    perm = [(i, (i + 1) % n) for i in range(n)]
    slots = jnp.arange(n)[:, None, None]
    buf = jnp.where(slots == me, x[None], 0.0)
    cur = x
    for s in range(1, n):
        cur = jax.lax.ppermute(cur, "ring", perm)
        buf = jnp.where(slots == (me - s) % n, cur[None], buf)
    return jnp.sum(buf, axis=0)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
