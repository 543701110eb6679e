"""mlp-train, RIGHT (sequence-parallel style): instead of psum, the (B/d, O) partial outputs are psum_scatter'ed over 'model' by rows, so each model device gets the finished output of B/(d m) of its data rows; b2 is added, the squared error of those rows summed, and that sum psum'ed over 'model' (a scalar) and divided by B/d gives the data shard's loss; jax.value_and_grad differentiates through (the transpose of psum_scatter is an all_gather of the output cotangents, not of weights); gradients pmean'ed over 'data'. Weights never move; only partial outputs are reduced over 'model'."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P())
OUT_SPECS = (P(None, "model"), P("model"), P("model", None), P(), P())


def body(m, x, y, w1, b1, w2, b2, lr):
    r = x.shape[0]; j = jax.lax.axis_index("model"); c = r // m

    def loss_fn(w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        mine = jax.lax.psum_scatter(h @ w2, "model", scatter_dimension=0, tiled=True) + b2  # (r/m, O)
        ys = jax.lax.dynamic_slice_in_dim(y, j * c, c, axis=0)
        return jax.lax.psum(jnp.sum((mine - ys) ** 2), "model") / r
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, g = jax.value_and_grad(loss_fn, argnums=(0, 1, 2, 3))(*params)
    loss, g = jax.lax.pmean((loss, g), "data")
    return (*(p - lr * gp for p, gp in zip((w1, b1, w2, b2), g)), loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(lambda *a: body(model, *a), mesh=mesh_of(data, model),
                                 in_specs=IN_SPECS, out_specs=OUT_SPECS))
