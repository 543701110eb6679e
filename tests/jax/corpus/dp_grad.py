"""8-way batch data parallelism, the gradient of the loss: a shard_map holding the loss (pmean
over 'batch'), differentiated with jax.value_and_grad under jit. JAX's transpose of the shard_map
puts a `reshard` between the forward and backward shard_maps. The mesh is jax.make_mesh's default
(Explicit axes): the exporter places the plain case arrays as the in_specs say.

Source: jax-ml/jax docs/notebooks/shard_map.md, "Neural networks" / "8-way batch data
parallelism" (loss_dp, jax.jit(jax.grad(loss_dp))); one tanh layer instead of the tutorial's MLP.
Constructs: value_and_grad of shard_map, reshard, pmean, Explicit mesh."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

INPUTS = ("w", "b", "x", "y")
OUTPUTS = ("loss", "gw", "gb")
SHAPES = {"w": "D,H", "b": "H", "x": "N,D", "y": "N,H"}
MESH = (("batch", 8),)


def predict(w, b, x):
    return jnp.tanh(x @ w + b)


def loss_dp(w, b, x, y):
    local = jnp.mean(jnp.sum((predict(w, b, x) - y) ** 2, axis=-1))
    return jax.lax.pmean(local, "batch")


def make(batch=8):
    mesh = jax.make_mesh((batch,), ("batch",), devices=jax.devices()[:batch])
    sm = jax.shard_map(loss_dp, mesh=mesh, in_specs=(P(), P(), P("batch"), P("batch")),
                       out_specs=P())
    vg = jax.value_and_grad(sm, argnums=(0, 1))

    def step(w, b, x, y):
        loss, (gw, gb) = vg(w, b, x, y)
        return loss, gw, gb
    return jax.jit(step)
