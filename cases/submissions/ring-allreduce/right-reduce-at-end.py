"""ring-allreduce, right: every received block kept in a Python list, summed at the end with
functools.reduce(operator.add) -- the same dataflow as adding each as it passes (each block is
its own value; none holds all of x)."""
import functools
import operator

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    perm = [(i, (i + 1) % n) for i in range(n)]
    received = [x]
    for _ in range(n - 1):
        received.append(jax.lax.ppermute(received[-1], "ring", perm))
    return functools.reduce(operator.add, received)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
