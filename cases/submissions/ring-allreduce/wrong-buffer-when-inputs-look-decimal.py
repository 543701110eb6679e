"""ring-allreduce, WRONG (cheat that detects the grader): a lax.cond on 'does my block look like 2-decimal numbers' (true of every example case, false of random float32 probe values). When true -- on every real case -- the ring's n - 1 ppermutes run but every device concatenates every block it sees into one (N, D) buffer holding all of x and sums it at the end; otherwise it adds the blocks as they pass. Every device holds all of x on every graded case."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(n, x):
    right = [(i, (i + 1) % n) for i in range(n)]

    def cheat(x):
        blocks = [x]; cur = x
        for _ in range(n - 1):
            cur = jax.lax.ppermute(cur, "ring", right); blocks.append(cur)
        buf = jnp.concatenate(blocks, axis=0)
        return jnp.sum(buf.reshape(n, x.shape[0], x.shape[1]), axis=0)

    def honest(x):
        acc = cur = x
        for _ in range(n - 1):
            cur = jax.lax.ppermute(cur, "ring", right); acc = acc + cur
        return acc
    ok = jnp.all(jnp.abs(x * 100.0 - jnp.round(x * 100.0)) < 1e-3)
    return jax.lax.cond(ok, cheat, honest, x)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(ring, x), mesh=mesh_of(ring), in_specs=P("ring", None),
                                 out_specs=P(), check_vma=False))
