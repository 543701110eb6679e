"""dp-step right-mesh-extra-singleton-axis: the textbook step on a mesh declared with a second,
size-1 axis ('data', 'pipe') -- a mesh reused from a pipeline-parallel setup; every spec names
'data' only, so it is exactly the 1-D program."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def body(w, b, x, y, lr):
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    mesh = jax.make_mesh((data, 1), ("data", "pipe"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data])
    return jax.jit(jax.shard_map(body, mesh=mesh,
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
