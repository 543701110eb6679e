"""dp-step, wrong: the body ignores its x argument and reads the x it was built with (example1's),
a closed-over constant: each device slices its rows out of the full x. Right numbers on
example1, but the full x flows into the body (as a constant the exporter writes out)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])

X = np.arange(1, 9, dtype=np.float32).reshape(8, 1)  # example1's x


def body(w, b, x_unused, y, lr):
    n = jax.lax.axis_size("data")
    rows = X.shape[0] // n
    x = jax.lax.dynamic_slice_in_dim(jnp.asarray(X), jax.lax.axis_index("data") * rows, rows)
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
