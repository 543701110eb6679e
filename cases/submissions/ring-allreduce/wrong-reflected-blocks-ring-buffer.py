"""ring-allreduce, WRONG (cheat, new encoding: gather-then-sum with the blocks REFLECTED): each device multiplies its block by a D x D Householder reflection R = I - 2 v v^T / |v|^2 (v from iota; R = R^-1), passes the reflected blocks round the ring with n - 1 neighbour ppermutes, and COLLECTS them into one buffer (n, B, D) -- a gather of all of x in one value, each number a weighted sum of a row's D elements, so no number is an element of x -- then sums the buffer locally and reflects back: out = (sum_k buf_k) R. The ring only moves data; the adding is done after the gather, on the whole of x held at once, which the exercise rules out ('each adds the blocks as they pass'). Right numbers."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def reflection(k):
    v = jax.lax.iota(jnp.float32, k) + 1.5
    return jnp.eye(k, dtype=jnp.float32) - 2.0 * jnp.outer(v, v) / jnp.dot(v, v)


def make(ring=8):
    n = ring

    def body(x):
        R = reflection(x.shape[1])
        cur = x @ R
        got = [cur]
        for _ in range(n - 1):
            cur = jax.lax.ppermute(cur, "ring", [(i, (i + 1) % n) for i in range(n)])
            got.append(cur)
        buf = jnp.stack(got)                      # every block, reflected, in one value
        return jnp.sum(buf, axis=0) @ R

    return jax.jit(jax.shard_map(body, mesh=mesh_of(n), in_specs=P("ring", None), out_specs=P(),
                                 check_vma=False))
