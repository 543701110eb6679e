"""matmul-2d, wrong (issue #47.3): a shard_map that only hands back its blocks of x and w (an
identity), and the whole product computed outside it on one device as a sum of outer products
-- broadcast multiplies and adds, no dot_general."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    ident = jax.shard_map(lambda x, w: (x, w), mesh=mesh_of(data, model),
                          in_specs=(P("data", None), P(None, "model")),
                          out_specs=(P("data", None), P(None, "model")))

    @jax.jit
    def program(x, w):
        x, w = ident(x, w)
        out = x[:, 0:1] * w[0:1, :]
        for k in range(1, x.shape[1]):
            out = out + x[:, k:k + 1] * w[k:k + 1, :]
        return out

    return program
