"""dp-step, right: the parameters raveled into one vector (jax.flatten_util.ravel_pytree), its
gradient pmean'd and unraveled."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def loss_fn(w, b, x, y):
    return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))


from jax.flatten_util import ravel_pytree


def body(w, b, x, y, lr):
    flat, unravel = ravel_pytree((w, b))
    flat_v = jax.lax.pcast(flat, "data", to="varying")
    loss, g = jax.value_and_grad(lambda f: loss_fn(*unravel(f), x, y))(flat_v)
    loss, g = jax.lax.pmean((loss, g), "data")
    new_w, new_b = unravel(flat - lr * g)
    return new_w, new_b, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
