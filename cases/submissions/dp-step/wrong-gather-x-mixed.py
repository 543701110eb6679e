"""dp-step, wrong: gathers the full x and y on every device, disguised by mixing in 0 * w[0, 0],
and computes the loss and gradient on the whole batch on every device."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    xf = jax.lax.all_gather(x + 0.0 * w[0, 0], "data", axis=0, tiled=True)
    yf = jax.lax.all_gather(y + 0.0 * w[0, 0], "data", axis=0, tiled=True)

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((xf @ w + b - yf) ** 2, axis=1))

    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
