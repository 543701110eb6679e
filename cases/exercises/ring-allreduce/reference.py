"""ring-allreduce, the reference: each of the n devices holds a block of x (rows split over
'ring'); every device must end with the sum of the n blocks, built from ppermute steps between
ring neighbours. Here the naive ring: n - 1 times, pass the block last received to the right
neighbour and add what arrives from the left.

Exported to cases/programs/ring-allreduce.json by python/export_builtin.py; the example cases'
expected values are this program's outputs under live JAX (make_cases.py)."""
import jax
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
    return acc


def make(ring=8):
    # check_vma=False: the sum is the same on every device, but JAX types a ppermute's result as
    # varying over 'ring', so it cannot prove out replicated (meshrun checks the replicas agree).
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
