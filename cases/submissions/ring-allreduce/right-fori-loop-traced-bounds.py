"""ring-allreduce, right: a `jax.lax.fori_loop` whose bounds are traced (JAX writes it as a
while loop): each device counts its steps from its own index, `axis_index('ring')`, to that
plus n - 1 -- the block arriving at step s is the one device s - 1 (mod n) started with -- so
every device runs n - 1 steps of the ring."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    me = jax.lax.axis_index("ring")

    def step(_, carry):
        acc, cur = carry
        cur = jax.lax.ppermute(cur, "ring", right)
        return acc + cur, cur

    acc, _ = jax.lax.fori_loop(me + 1, me + n, step, (x, x))
    return acc


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
