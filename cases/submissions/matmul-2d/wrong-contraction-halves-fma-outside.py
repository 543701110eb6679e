"""matmul-2d wrong-contraction-halves-fma-outside: each device multiplies its blocks over the first
and, apart, the second half of the contraction; the two partial blocks are returned stacked and
added OUTSIDE the shard_map as h0 * 1.0 + h1 (one FMA). The gallery's
wrong-contraction-halves-added-outside with the outside add written as a product plus an add."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    k = x.shape[1] // 2
    h0 = x[:, :k] @ w[:k]
    h1 = x[:, k:] @ w[k:]
    return jnp.stack([h0, h1])


def make(data=2, model=4):
    sm = jax.shard_map(body, mesh=mesh_of(data, model), in_specs=(P("data", None), P(None, "model")),
                       out_specs=P(None, "data", "model"))

    def prog(x, w):
        hs = sm(x, w)
        return hs[0] * 1.0 + hs[1]
    return jax.jit(prog)
