"""dp-step, right: the pcast to varying inside the differentiated function: grad's transpose of
it psums the local gradients, so they arrive summed over 'data'; divided by n; the loss pmean'd."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def loss_fn(w, b, x, y):
    return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))


def body(w, b, x, y, lr):
    def loss_of(w, b):
        wv, bv = jax.lax.pcast((w, b), "data", to="varying")
        return loss_fn(wv, bv, x, y)

    loss, (gw, gb) = jax.value_and_grad(loss_of, argnums=(0, 1))(w, b)
    n = jax.lax.axis_size("data")
    return w - lr * (gw / n), b - lr * (gb / n), jax.lax.pmean(loss, "data")


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
