"""tp-mlp, WRONG (cheat that detects the grader, second detector): the devices agree (psum of a flag over 'model') on whether ANY element of w1 or w2 has magnitude outside [0.5, 2) -- true of every example case (they hold zeros and small weights), never true of probe values drawn in [0.5, 2). When true -- on every real case -- each device plainly all_gathers w1, b1 and w2, computes the WHOLE MLP itself and keeps its hidden columns (pmean of identical replicas as the 'reduction'); otherwise the honest tensor-parallel step. Every device holds the full weight matrices on every graded case."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


IN_SPECS = (P(), P(None, "model"), P("model"), P("model", None), P())
OUT_SPECS = (P(), P(None, "model"))


def outside(v):
    a = jnp.abs(v)
    return jnp.sum(jnp.logical_or(a < 0.5, a >= 2.0).astype(jnp.int32))


def cheat(x, w1, b1, w2, b2):
    c = w1.shape[1]; i = jax.lax.axis_index("model")
    W1 = jax.lax.all_gather(w1, "model", axis=1, tiled=True)
    W2 = jax.lax.all_gather(w2, "model", axis=0, tiled=True)
    B1 = jax.lax.all_gather(b1, "model", axis=0, tiled=True)
    hf = jax.nn.relu(x @ W1 + B1)
    return jax.lax.pmean(hf @ W2 + b2, "model"), jax.lax.dynamic_slice_in_dim(hf, i * c, c, axis=1)


def honest(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def body(x, w1, b1, w2, b2):
    real = jax.lax.psum(outside(w1) + outside(w2), "model") > 0
    return jax.lax.cond(real, cheat, honest, x, w1, b1, w2, b2)


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), in_specs=IN_SPECS, out_specs=OUT_SPECS,
                                 check_vma=False))
