"""matmul-2d, right: the local product as a `jax.lax.fori_loop` over the contraction, k from 0 to
D, adding the outer product of x's column k and w's row k to the accumulator (D is symbolic in
the export, so the bound is traced: JAX writes a while loop)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w):
    def step(k, acc):
        xk = jax.lax.dynamic_index_in_dim(x, k, axis=1, keepdims=False)
        wk = jax.lax.dynamic_index_in_dim(w, k, axis=0, keepdims=False)
        return acc + jnp.outer(xk, wk)

    acc = jnp.zeros((x.shape[0], w.shape[1]), x.dtype)
    acc = jax.lax.pcast(acc, ("data", "model"), to="varying")  # the carry varies as x, w do
    return jax.lax.fori_loop(0, x.shape[1], step, acc)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model")))
