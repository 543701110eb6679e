"""tp-mlp, RIGHT (activation recomputation across two shard_maps): a first shard_map computes each
device's hidden block and psums the partial outputs, returning only the reduced out (b2 added
once); a second shard_map, handed the same blocks of w1, b1, recomputes the hidden block to return
it split over 'model' (as remat would, instead of keeping it alive)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(model=8):
    mesh = mesh_of(model)

    def fwd(x, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        return jax.lax.psum(h @ w2, "model") + b2

    def hid(x, w1, b1):
        return jax.nn.relu(x @ w1 + b1)

    sm1 = jax.shard_map(fwd, mesh=mesh,
                        in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                        out_specs=P())
    sm2 = jax.shard_map(hid, mesh=mesh, in_specs=(P(), P(None, "model"), P("model")),
                        out_specs=P(None, "model"))
    return jax.jit(lambda x, w1, b1, w2, b2: (sm1(x, w1, b1, w2, b2), sm2(x, w1, b1)))
