"""matmul-2d, WRONG (every device computes ALL B rows of its columns, from a mixed copy of all of
x): swapped nesting -- outer shard_map manual over 'model' (w's columns, right; x handed P()). The
outer body mixes x's two row halves, u = x_top + x_bottom, v = x_top - x_bottom (slices and
add/subtract: no product, no reduction), and hands u and v WHOLE (P()) to the inner shard_map
manual over 'data'. Every inner device computes u @ w_blk and v @ w_blk, unmixes all B rows
((uw + vw)/2, (uw - vw)/2) -- the work of every 'data' device -- and keeps its own rows
(dynamic_slice at axis_index('data')), returned P('data'). No number a device holds is an element
of x (each is a sum or difference of two), and nothing arrives by a collective."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)

    def inner_body(u, v, w):
        uw, vw = u @ w, v @ w
        full = jnp.concatenate([(uw + vw) * 0.5, (uw - vw) * 0.5], axis=0)
        r = full.shape[0] // data
        return jax.lax.dynamic_slice_in_dim(full, jax.lax.axis_index("data") * r, r, axis=0)

    inner = jax.shard_map(inner_body, axis_names={"data"},
                          in_specs=(P(), P(), P()), out_specs=P("data"))

    def outer(x, w):
        half = x.shape[0] // 2
        a, b = x[:half], x[half:]
        return inner(a + b, a - b, w)

    return jax.jit(jax.shard_map(outer, mesh=mesh, axis_names={"model"},
                                 in_specs=(P(), P(None, "model")), out_specs=P(None, "model")))
