"""dp-step, right: per-example gradients by vmap(grad), averaged over the block, then pmean."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    def one(w, b, xi, yi):
        return jnp.sum((xi @ w + b - yi) ** 2)

    wv, bv = jax.lax.pcast((w, b), "data", to="varying")
    losses = jax.vmap(one, in_axes=(None, None, 0, 0))(wv, bv, x, y)
    gws, gbs = jax.vmap(jax.grad(one, argnums=(0, 1)), in_axes=(None, None, 0, 0))(wv, bv, x, y)
    loss, gw, gb = jnp.mean(losses), jnp.mean(gws, axis=0), jnp.mean(gbs, axis=0)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
