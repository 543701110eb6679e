"""dp-step right-update-in-second-shard-map: a first shard_map computes the loss and the pmean'd
gradients; a second shard_map (the "optimizer step", replicated specs) applies w - lr * g and
b - lr * gb on every device."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def grads_body(w, b, x, y):
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv)
    return jax.lax.pmean((loss, gw, gb), "data")


def make(data=8):
    mesh = mesh_of(data)
    f = jax.shard_map(grads_body, mesh=mesh, in_specs=(P(), P(), P("data"), P("data")),
                      out_specs=(P(), P(), P()))
    u = jax.shard_map(lambda w, b, gw, gb, lr: (w - lr * gw, b - lr * gb), mesh=mesh,
                      in_specs=(P(), P(), P(), P(), P()), out_specs=(P(), P()))

    def prog(w, b, x, y, lr):
        loss, gw, gb = f(w, b, x, y)
        w2, b2 = u(w, b, gw, gb, lr)
        return w2, b2, loss
    return jax.jit(prog)
