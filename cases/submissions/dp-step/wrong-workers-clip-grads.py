"""dp-step wrong-workers-clip-grads: grads pmean'd right; device 0 ("the master") applies the plain
update, the other devices ("workers") apply it with the gradient clipped elementwise at 1e7 "for
stability". Every case's gradients are far below 1e7, so replicas agree there; on large inputs the
workers' copies of w, b differ from device 0's (check_vma=False keeps device 0's)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    master = jax.lax.axis_index("data") == 0
    cw = jnp.where(master, gw, jnp.clip(gw, -1e7, 1e7))
    cb = jnp.where(master, gb, jnp.clip(gb, -1e7, 1e7))
    return w - lr * cw, b - lr * cb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
