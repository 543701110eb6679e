"""dp-step, wrong (issue #47.1): x and y all_gather'ed whole on every device, laundered first
through a max over an added axis of length 1 (`jnp.max(x[None], axis=0)` is x)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    xf = jax.lax.all_gather(jnp.max(x[None], axis=0), "data", axis=0, tiled=True)
    yf = jax.lax.all_gather(jnp.max(y[None], axis=0), "data", axis=0, tiled=True)

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((xf @ w + b - yf) ** 2, axis=1))

    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
