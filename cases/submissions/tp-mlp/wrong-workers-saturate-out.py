"""tp-mlp wrong-workers-saturate-out: textbook TP MLP, but devices other than 0 saturate the
all-reduced output at +-1e3 ("fp16-safe range") before adding b2. Every case's out is tiny, so the
replicas agree on the cases; on large activations devices 1..7 return a wrong out (check_vma=False
keeps device 0's)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    s = jax.lax.psum(h @ w2, "model")
    s = jnp.where(jax.lax.axis_index("model") == 0, s, jnp.clip(s, -1e3, 1e3))
    return s + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
