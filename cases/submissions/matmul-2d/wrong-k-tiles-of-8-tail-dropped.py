"""matmul-2d, WRONG (right only on the cases' shapes): the local product accumulated over tiles of
(up to) 8 of the contraction dimension -- `t = min(D, 8); nt = D // t` -- forgetting the tail tile.
Every case has D <= 5 (one tile); with D = 11 the last 3 terms of every dot product are missing."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    D = int(x.shape[1])
    t = min(D, 8)
    nt = D // t
    acc = jnp.zeros((x.shape[0], w.shape[1]), x.dtype)
    for k in range(nt):
        acc = acc + x[:, k * t:(k + 1) * t] @ w[k * t:(k + 1) * t]
    return acc


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")), out_specs=P("data", "model")))
