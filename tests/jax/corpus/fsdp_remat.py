"""8-way fully sharded data parallelism: parameters split over 'batch', all-gathered just before
use inside jax.remat (jax.checkpoint) so the backward pass gathers them again; the gradient of
the pmean'd loss.

Source: jax-ml/jax docs/notebooks/shard_map.md, "8-way fully sharded data parallelism (FSDP)"
(predict_fsdp under jax.remat with a policy, loss_fsdp, jax.grad(loss_fsdp)); one layer.
Constructs: checkpoint (remat2), all_gather, grad of shard_map, reshard."""
import _common  # noqa: F401

from functools import partial  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("w", "b", "x", "y")
OUTPUTS = ("loss", "gw", "gb")
SHAPES = {"w": "D,H", "b": "H", "x": "N,D", "y": "N,H"}
MESH = (("batch", 8),)


@partial(jax.remat, policy=lambda op, *_, **__: str(op) != "all_gather")
def predict_fsdp(w_frag, b_frag, x):
    w = jax.lax.all_gather(w_frag, "batch", axis=1, tiled=True)
    b = jax.lax.all_gather(b_frag, "batch", tiled=True)
    return jax.nn.relu(x @ w + b)


def loss_fsdp(w_frag, b_frag, x, y):
    local = jnp.mean(jnp.sum((predict_fsdp(w_frag, b_frag, x) - y) ** 2, axis=-1))
    return jax.lax.pmean(local, "batch")


def make(batch=8):
    mesh = jax.make_mesh((batch,), ("batch",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:batch])
    sm = jax.shard_map(loss_fsdp, mesh=mesh,
                       in_specs=(P(None, "batch"), P("batch"), P("batch"), P("batch")),
                       out_specs=P())
    vg = jax.value_and_grad(sm, argnums=(0, 1))

    def step(w, b, x, y):
        loss, (gw, gb) = vg(w, b, x, y)
        return loss, gw, gb
    return jax.jit(step)
