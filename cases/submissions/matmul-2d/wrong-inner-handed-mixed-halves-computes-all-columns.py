"""matmul-2d, WRONG (every device computes ALL of x_blk @ w from a mixed copy of all of w): outer
shard_map manual over 'data' (x's rows; w handed P()). The outer body mixes w's two column halves,
u = w_left + w_right, v = w_left - w_right (slices and an add/subtract: no product, no reduction),
and hands u and v WHOLE (P()) to the inner shard_map manual over 'model'. Every inner device
computes x_blk @ u and x_blk @ v (all H/2 columns each), unmixes the whole product,
left = (xu + xv) / 2, right = (xu - xv) / 2 -- every column of x_blk @ w, the work of all 4 model
devices -- and keeps its own columns (dynamic_slice at axis_index('model')), returned
P(None, 'model'). No number a device holds is an element or a scaled copy of w (each is a sum or
difference of two), and nothing arrives by a collective."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)

    def inner_body(x, u, v):
        xu, xv = x @ u, x @ v
        full = jnp.concatenate([(xu + xv) * 0.5, (xu - xv) * 0.5], axis=1)
        q = full.shape[1] // model
        return jax.lax.dynamic_slice_in_dim(full, jax.lax.axis_index("model") * q, q, axis=1)

    inner = jax.shard_map(inner_body, axis_names={"model"},
                          in_specs=(P(), P(), P()), out_specs=P(None, "model"))

    def outer(x, w):
        half = w.shape[1] // 2
        a, b = w[:, :half], w[:, half:]
        return inner(x, a + b, a - b)

    return jax.jit(jax.shard_map(outer, mesh=mesh, axis_names={"data"},
                                 in_specs=(P("data", None), P()), out_specs=P("data")))
