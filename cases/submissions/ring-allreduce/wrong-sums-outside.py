"""ring-allreduce, wrong: no collective at all -- the shard_map hands back each device's block
(out_specs P('ring')) and the blocks are added up outside it, on one device."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    return x


def make(ring=8):
    blocks = jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                           in_specs=P("ring", None), out_specs=P("ring", None))

    @jax.jit
    def allreduce(x):
        b = blocks(x)
        return jnp.sum(b.reshape(ring, -1, b.shape[1]), axis=0)

    return allreduce
