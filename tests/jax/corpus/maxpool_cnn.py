"""8-way batch data parallelism of a small CNN-ish step with a max pool and an average pool: per
device, a per-channel scale and bias, relu, a 2-wide max pool of stride 2 over the sequence, an
average pool of 2 with padding, the loss's pmean over 'batch', and jax.value_and_grad of it -- the
gradient of the max pool is select_and_scatter_add, the average pool's transpose a
reduce_window_sum of the padded cotangent.

Source: jax-ml/jax docs/notebooks/shard_map.md, "Neural networks" / "8-way batch data
parallelism" (loss_dp under jax.value_and_grad), with pooling as in flax.linen.max_pool /
avg_pool (lax.reduce_window). Constructs: reduce_window_max, reduce_window_sum,
select_and_scatter_add, value_and_grad of shard_map."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

INPUTS = ("w", "b", "x", "y")
OUTPUTS = ("loss", "gw", "gb")
SHAPES = {"w": "C", "b": "C", "x": "N,L,C", "y": "N,C"}
MESH = (("batch", 8),)


def loss_dp(w, b, x, y):
    h = jax.nn.relu(x * w + b)
    pooled = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 1), (1, 2, 1), "VALID")
    avg = lax.reduce_window(pooled, 0.0, lax.add, (1, 2, 1), (1, 1, 1),
                            [(0, 0), (0, 1), (0, 0)]) / 2.0
    feat = jnp.sum(avg, axis=1)
    local = jnp.mean(jnp.sum((feat - y) ** 2, axis=-1))
    return lax.pmean(local, "batch")


def make(batch=8):
    mesh = jax.make_mesh((batch,), ("batch",), devices=jax.devices()[:batch])
    sm = jax.shard_map(loss_dp, mesh=mesh, in_specs=(P(), P(), P("batch"), P("batch")),
                       out_specs=P())
    vg = jax.value_and_grad(sm, argnums=(0, 1))

    def step(w, b, x, y):
        loss, (gw, gb) = vg(w, b, x, y)
        return loss, gw, gb
    return jax.jit(step)
