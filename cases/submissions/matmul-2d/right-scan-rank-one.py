"""matmul-2d, right: the local product as a `jax.lax.scan` over the contraction: xs the pairs
(column k of x, row k of w), the carry the accumulated sum of their outer products."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    def step(acc, pair):
        xk, wk = pair
        return acc + jnp.outer(xk, wk), None

    acc = jnp.zeros((x.shape[0], w.shape[1]), x.dtype)
    acc = jax.lax.pcast(acc, ("data", "model"), to="varying")  # the carry varies as x, w do
    out, _ = jax.lax.scan(step, acc, (x.T, w))
    return out


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
