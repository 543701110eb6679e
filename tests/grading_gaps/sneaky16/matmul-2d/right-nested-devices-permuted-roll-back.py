"""matmul-2d, RIGHT (nested; the devices' column blocks permuted, as the gallery's
right-devices-permuted): outer shard_map manual over 'data' (x's rows; w handed P()). The outer
body rolls w's columns by one block (jnp.roll(w, q, axis=1), q = H / model) before handing it to
the inner shard_map manual over 'model' (x_blk @ w_blk, P(None, 'model')): model device i
multiplies by w's block i - 1. The outer body rolls the result back by -q (jnp.roll(out, -q,
axis=1)). Every device holds one block of w and computes one block of out."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    inner = jax.shard_map(lambda x, w: x @ w, axis_names={"model"},
                          in_specs=(P(), P(None, "model")), out_specs=P(None, "model"))

    def outer(x, w):
        q = w.shape[1] // model
        return jnp.roll(inner(x, jnp.roll(w, q, axis=1)), -q, axis=1)

    return jax.jit(jax.shard_map(outer, mesh=mesh, axis_names={"data"},
                                 in_specs=(P("data", None), P()), out_specs=P("data")))
