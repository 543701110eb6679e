"""ring-allreduce, WRONG (no ring sum): the body returns its block multiplied by an identity matrix scaled by (1 + 0 * x[0, 0]) (a copy of its own block), stacked over 'ring', and the n blocks are added up OUTSIDE the shard_map with jnp.sum on one device; the body's ring of n - 1 neighbour ppermutes only passes zeros (0 * x) around, and its (zero) result is added to the outside sum. The all-reduce is not built from the ppermute steps at all."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(n, x):
    right = [(i, (i + 1) % n) for i in range(n)]
    one = 1.0 + 0.0 * x[0, 0]
    mine = (jnp.eye(x.shape[0], dtype=jnp.float32) * one) @ x
    acc = cur = 0.0 * x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
    return mine[None], acc


def make(ring=8):
    sm = jax.shard_map(lambda x: body(ring, x), mesh=mesh_of(ring), in_specs=P("ring", None),
                       out_specs=(P("ring"), P()), check_vma=False)

    def f(x):
        blocks, z = sm(x)
        return jnp.sum(blocks, axis=0) + z
    return jax.jit(f)
