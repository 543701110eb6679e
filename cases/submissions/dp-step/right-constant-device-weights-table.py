"""dp-step, RIGHT (unusual reduction): the mean over devices is written as a weighted sum -- each device looks up its weight in a small numpy table of the mesh size (np.full(n, 1/n), a constant of the program, derived from no input) and psums weight * (local loss, gradients) over 'data'. x and y enter split by rows, every device differentiates only its own rows; the psum is the required reduction and gives exactly the mean gradient. The constant table is closed over, but it is not x or y nor derived from them."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(data=8):
    table = np.full((data,), 1.0 / data, np.float32)

    def body(w, b, x, y, lr):
        wt = jnp.asarray(table)[jax.lax.axis_index("data")]

        def loss_fn(w, b):
            return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

        w_, b_ = jax.lax.pcast((w, b), "data", to="varying")
        loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w_, b_)
        loss, gw, gb = jax.lax.psum((wt * loss, wt * gw, wt * gb), "data")
        return w - lr * gw, b - lr * gb, loss

    return jax.jit(jax.shard_map(body, mesh=mesh_of(data), in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
