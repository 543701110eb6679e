"""matmul-2d, WRONG (cheat, the work outside the mesh): the body multiplies nothing: it hands back its own x rows and w columns multiplied by identity matrices scaled by (1 + 0 * x[0, 0]) (numerically the blocks themselves), stacked; OUTSIDE the shard_map x and w are reassembled and out = x @ w is computed whole on one device. The sharded matmul the exercise asks for never happens."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    one = 1.0 + 0.0 * x[0, 0]
    ex = jnp.eye(x.shape[0], dtype=jnp.float32) * one
    ew = jnp.eye(w.shape[1], dtype=jnp.float32) * one
    return (ex @ x)[None], (w @ ew)[None]


def make(data=2, model=4):
    sm = jax.shard_map(body, mesh=mesh_of(data, model),
                       in_specs=(P("data", None), P(None, "model")),
                       out_specs=(P("data"), P("model")), check_vma=False)

    def f(x, w):
        xs, ws = sm(x, w)
        X = xs.reshape(x.shape)
        W = jnp.transpose(ws, (1, 0, 2)).reshape(w.shape)
        return X @ W
    return jax.jit(f)
