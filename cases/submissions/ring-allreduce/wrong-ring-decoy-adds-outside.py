"""ring-allreduce, wrong (issue #47.3): a decoy ring inside (each device passes its block round
and keeps its own), the blocks handed back split (out_specs P('ring')) and added up outside the
shard_map by slices and adds -- no reduction primitive, the same sum done on one device."""
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
        rows = b.shape[0] // ring
        out = b[0:rows]
        for k in range(1, ring):
            out = out + b[k * rows:(k + 1) * rows]
        return out

    return allreduce
