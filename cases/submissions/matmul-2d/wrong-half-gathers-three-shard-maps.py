"""matmul-2d, WRONG (cheat: the gather of w split across several shard_maps): one shard_map
all_gathers the top rows of w over 'model', another the bottom rows (each returns its piece
replicated); a third receives both pieces whole on every device, multiplies x by the full w in
two halves and keeps its own columns. No single value holds all of w."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN_SPECS = (P("data", None), P(None, "model"))
OUT_SPEC = P("data", "model")


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    gather = jax.shard_map(lambda p: jax.lax.all_gather(p, "model", axis=1, tiled=True), mesh=mesh,
                           in_specs=P(None, "model"), out_specs=P(), check_vma=False)

    def body(x, top, bot):
        c = top.shape[1] // model
        j = jax.lax.axis_index("model")
        d = top.shape[0]
        full = x[:, :d] @ top + x[:, d:] @ bot
        return jax.lax.dynamic_slice_in_dim(full, j * c, c, axis=1)

    mm = jax.shard_map(body, mesh=mesh, in_specs=(P("data", None), P(), P()), out_specs=OUT_SPEC,
                       check_vma=False)

    def f(x, w):
        d = w.shape[0] // 2
        return mm(x, gather(w[:d]), gather(w[d:]))
    return jax.jit(f)
