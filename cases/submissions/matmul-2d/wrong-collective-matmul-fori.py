"""matmul-2d, wrong: the collective matmul of JAX's shard_map tutorial, as a `jax.lax.fori_loop`:
w's column blocks passed round the 'model' ring by ppermute, each device multiplying its rows of
x by every block as it passes and writing the products into a (B/2, H) row block of out, returned
P('data', None) (check_vma off): right numbers and no device ever holds all of w, but every
device computes and returns whole rows of out, not its (B/2, H/4) block -- the exercise's out is
split over both axes and needs no collective."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(x, w, m):
    me = jax.lax.axis_index("model")
    cols = w.shape[1]
    from_right = [(i, (i - 1) % m) for i in range(m)]

    def put(out, blk, s):  # after s shifts, blk is device me + s's block of columns
        return jax.lax.dynamic_update_slice_in_dim(out, x @ blk, ((me + s) % m) * cols, axis=1)

    def step(s, carry):
        out, blk = carry
        out = put(out, blk, s)
        return out, jax.lax.ppermute(blk, "model", from_right)

    out = jnp.zeros((x.shape[0], m * cols), x.dtype)
    out, blk = jax.lax.fori_loop(0, m - 1, step, (out, w))
    return put(out, blk, m - 1)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(lambda x, w: body(x, w, model), mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", None), check_vma=False))
