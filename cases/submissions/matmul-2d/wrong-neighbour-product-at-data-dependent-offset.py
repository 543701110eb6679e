"""matmul-2d, WRONG (another device does my product, hidden by DATA-DEPENDENT PLACEMENT): every device writes its w columns into a wide zero buffer (L = 2048 columns) at an offset computed from their values (an integer hash) and ppermutes the buffer to its right neighbour over 'model'; the neighbour multiplies its x rows by the whole buffer and ppermutes the (r, L) product back; the owner cuts its out block from it at its own offset. No device ever multiplies its own w columns: each computes its neighbour's out block, with two collectives where the exercise asks for none. The received w elements sit at a place that changes with the values, so a test for 'another device's element at both draws in the same place' does not see them. Right numbers."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

L = 2048


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    m = model

    def body(x, w):
        c = w.shape[1]
        off = jnp.mod(jnp.sum(jnp.mod(jnp.floor(jnp.abs(w) * 64.0).astype(jnp.int32), 997) * 37), L - 64)   # an int hash of the values
        buf = jax.lax.dynamic_update_slice_in_dim(jnp.zeros((w.shape[0], L), w.dtype), w, off, axis=1)
        right = [(i, (i + 1) % m) for i in range(m)]
        left = [(i, (i - 1) % m) for i in range(m)]
        nb = jax.lax.ppermute(buf, "model", right)
        prod = x @ nb                                             # my neighbour's out block, somewhere
        back = jax.lax.ppermute(prod, "model", left)
        return jax.lax.dynamic_slice_in_dim(back, off, c, axis=1)

    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")), out_specs=P("data", "model"),
                                 check_vma=False))
