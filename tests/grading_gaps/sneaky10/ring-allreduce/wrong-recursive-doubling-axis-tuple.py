"""ring-allreduce, WRONG: recursive doubling (log2 n steps, each adding the partial sum from 1, 2,
4 devices away) -- hops of 2 and 4 are not ring neighbours -- with every ppermute's axis written as
the one-element tuple ('ring',) instead of the string 'ring'."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(ring=8):
    n = ring

    def body(x):
        acc = x
        k = 1
        while k < n:
            acc = acc + jax.lax.ppermute(acc, ("ring",), [(i, i ^ k) for i in range(n)])
            k *= 2
        return acc

    return jax.jit(jax.shard_map(body, mesh=mesh_of(n), in_specs=P("ring", None), out_specs=P(),
                                 check_vma=False))
