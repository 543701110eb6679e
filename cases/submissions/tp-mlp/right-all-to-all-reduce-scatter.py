"""tp-mlp, RIGHT (unusual collective): the (B, O) partial outputs -- never weights -- are all-reduced by hand: flattened, zero-padded to n chunks, all_to_all'ed so device i gets chunk i of every device's partial, summed (a reduce-scatter), then all_gather'ed back; b2 added once after. Weights stay split; hidden stays split."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(n, x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    p = h @ w2
    flat = p.reshape(-1); m = flat.shape[0]; k = -(-m // n)
    chunks = jnp.pad(flat, (0, n * k - m)).reshape(n, k)
    mine = jnp.sum(jax.lax.all_to_all(chunks, "model", 0, 0, tiled=True).reshape(n, k), axis=0)
    tot = jax.lax.all_gather(mine, "model", axis=0, tiled=True)[:m].reshape(p.shape)
    return tot + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(lambda *a: body(model, *a), mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
