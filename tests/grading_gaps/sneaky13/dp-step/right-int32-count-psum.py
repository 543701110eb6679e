"""dp-step right-int32-count-psum: the loss and gradients as sums over the device's rows, psum'd;
the global example count psum'd as an int32 (rows per device) and converted to float for the
mean -- the way a variable-batch loader counts examples."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    count = jax.lax.psum(jnp.int32(x.shape[0]), "data").astype(jnp.float32)

    def sse(w, b):
        return jnp.sum((x @ w + b - y) ** 2)
    s, (gw, gb) = jax.value_and_grad(sse, argnums=(0, 1))(w, b)
    s, gw, gb = jax.lax.psum((s, gw, gb), "data")
    return w - lr * (gw / count), b - lr * (gb / count), s / count


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
