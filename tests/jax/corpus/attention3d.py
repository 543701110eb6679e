"""Attention-shaped, rank 3 in and out: q, k, v of shape (B, S, E) split over the batch, per
device softmax(q k^T / sqrt(E)) v with a batched dot_general, and the global max score by pmax.

Source: modelled on jax-ml/jax docs/notebooks/shard_map.md "8-way batch data parallelism"
(batch split, replicated computation per shard) applied to an attention block as in
tests/jax/programs/attention.py. Constructs: rank-3 inputs/outputs, batched dot_general, pmax."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("q", "k", "v")
OUTPUTS = ("out", "peak")
SHAPES = {"q": "B,S,E", "k": "B,S,E", "v": "B,S,E"}
MESH = (("data", 8),)


def body(q, k, v):
    s = jnp.einsum("bse,bte->bst", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
    p = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("bst,bte->bse", p, v), jax.lax.pmax(jnp.max(s), "data")


def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:data])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("data"), P("data"), P("data")),
                                 out_specs=(P("data"), P())))
