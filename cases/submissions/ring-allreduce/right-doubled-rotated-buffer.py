"""ring-allreduce, right (issue #47.7): a reduce-scatter + all-gather ring whose chunks live in a
doubled buffer (the n chunks twice over, so that chunk k is any window's row k): at each step the
device reads its window of the rotated buffer. It holds its own block twice over, never another
device's block whole."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, n):
    me = jax.lax.axis_index("ring")
    right = [(i, (i + 1) % n) for i in range(n)]
    size = x.size
    c = -(-size // n)
    chunks = jnp.pad(x.reshape(-1), (0, c * n - size)).reshape(n, c)
    buf = jnp.concatenate([chunks, chunks])  # (2n, c): row k and row k + n are chunk k
    for s in range(n - 1):
        window = jax.lax.dynamic_slice_in_dim(buf, (me - s) % n, n, axis=0)  # rotated
        got = jax.lax.ppermute(window[0], "ring", right)
        k = (me - s - 1) % n
        mine = jax.lax.dynamic_index_in_dim(buf, k, keepdims=False) + got
        buf = jax.lax.dynamic_update_index_in_dim(buf, mine, k, 0)
        buf = jax.lax.dynamic_update_index_in_dim(buf, mine, k + n, 0)
    for s in range(n - 1):
        window = jax.lax.dynamic_slice_in_dim(buf, (me + 1 - s) % n, n, axis=0)
        got = jax.lax.ppermute(window[0], "ring", right)
        k = (me - s) % n
        buf = jax.lax.dynamic_update_index_in_dim(buf, got, k, 0)
        buf = jax.lax.dynamic_update_index_in_dim(buf, got, k + n, 0)
    return jax.lax.slice(buf[:n].reshape(-1), (0,), (size,)).reshape(x.shape)


def make(ring=8):
    return jax.jit(jax.shard_map(lambda x: body(x, ring), mesh=mesh_of(ring),
                                 in_specs=P("ring", None), out_specs=P(), check_vma=False))
