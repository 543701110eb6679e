"""ring-allreduce, wrong: a decoy ring inside (each device passes its block round and keeps
its own), the blocks handed back split (out_specs P('ring')) and summed outside the shard_map on
one device: the sum is not computed by the ring at all."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    perm = [(i, (i + 1) % n) for i in range(n)]
    cur = x
    for _ in range(n):
        cur = jax.lax.ppermute(cur, "ring", perm)
    return cur


def make(ring=8):
    blocks = jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                           in_specs=P("ring", None), out_specs=P("ring", None))

    @jax.jit
    def allreduce(x):
        b = blocks(x)
        return jnp.sum(b.reshape(ring, -1, b.shape[1]), axis=0)

    return allreduce
