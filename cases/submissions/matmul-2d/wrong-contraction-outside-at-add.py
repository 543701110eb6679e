"""matmul-2d, wrong (cheat, right numbers): the devices only form the elementwise products of their
x rows and w columns (rank 3 (B/2, D, H/4), split P('data', None, 'model')); the sum over D --
every element of out -- is computed OUTSIDE the shard_map by a scatter-add (.at[].add of the
(B*D, H) products into (B, H), each product sent to its row) on one device. No device computes
its out block; the work is done unsplit outside."""
import jax, jax.numpy as jnp
from jax.sharding import PartitionSpec as P, AxisType

def make(data, model):
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    sm = jax.shard_map(lambda x, w: x[:, :, None] * w[None, :, :], mesh=mesh,
                       in_specs=(P("data", None), P(None, "model")), out_specs=P("data", None, "model"))
    def f(x, w):
        p = sm(x, w)
        B, D, H = p.shape
        rows = jnp.broadcast_to(jnp.arange(B, dtype=jnp.int32)[:, None], (B, D)).reshape(-1)
        return jnp.zeros((B, H), jnp.float32).at[rows].add(p.reshape(B * D, H))
    return jax.jit(f)
