"""ring-allreduce, wrong (issue #47.4): the sum by psum in a first shard_map, then a decoy ring of
ppermutes (each block passed round and back to itself) in a second: only the last shard_map was
graded, so the psum went unseen."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(ring=8):
    mesh = mesh_of(ring)
    summed = jax.shard_map(lambda x: jax.lax.psum(x, "ring"), mesh=mesh,
                           in_specs=P("ring", None), out_specs=P())

    def decoy(s):
        perm = [(i, (i + 1) % ring) for i in range(ring)]
        cur = s
        for _ in range(ring):
            cur = jax.lax.ppermute(cur, "ring", perm)
        return cur

    passed = jax.shard_map(decoy, mesh=mesh, in_specs=P(), out_specs=P(), check_vma=False)

    @jax.jit
    def allreduce(x):
        return passed(summed(x))

    return allreduce
