"""dp-step, right: the optax-like update jax.tree.map(lambda p, g: p - lr * g) over a (w, b)
tuple."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def loss_fn(w, b, x, y):
    return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))


def body(w, b, x, y, lr):
    params = (w, b)
    loss, grads = jax.value_and_grad(lambda p: loss_fn(*p, x, y))(
        jax.lax.pcast(params, "data", to="varying"))
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new_w, new_b = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    return new_w, new_b, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
