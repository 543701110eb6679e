"""ring-allreduce wrong-budget-exhaust-then-ring-buffer, a cheat: each device first computes 2,000,000 distinct junk
numbers (outer product of two constant linspaces times 1 + 0 x[0,0]) past what the dependence check records per device;
then the blocks go round the ring as 3 v + 0.25 and every device keeps every one in one buffer (all of x, encoded) and
sums it at the end."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P

_A = np.linspace(1000.1, 2000.3, 1414).astype(np.float32)
_B = np.linspace(0.31, 0.97, 1415).astype(np.float32)


def make(ring):
    mesh = Mesh(np.array(jax.devices()[:ring]), ("ring",))
    perm = [(i, (i + 1) % ring) for i in range(ring)]

    def body(x):
        junk = jnp.outer(_A, _B) * (1.0 + 0.0 * x[0, 0])
        e = 3.0 * x + 0.25 + 0.0 * jnp.sum(junk)
        blocks = [e]
        for _ in range(ring - 1):
            e = lax.ppermute(e, "ring", perm)
            blocks.append(e)
        buf = jnp.stack(blocks)
        return (jnp.sum(buf, axis=0) - 0.25 * ring) / 3.0

    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("ring", None), out_specs=P(), check_vma=False))
