"""Mixture-of-experts routing, tokens split 8 ways over 'data': from the router's logits, the top 2
experts of each token (lax.top_k; approx_max_k, exact on CPU, beside it), each token's gates
spread over its experts, every token's place in its expert's queue (a cumsum over the tokens of
the one-hot dispatch mask, as Switch Transformer's capacity positions are), the experts' outputs
weighted by the gates, the running sum of
the top gates (a float cumsum of 20 tokens a device: XLA's summation order shows), the tokens
ordered by their first expert (argsort, a stable sort of two operands) and the experts' load
summed over the mesh (psum).

Source: the top-k routing of JAX's shard_map users' MoE layers (e.g. the expert-parallel MoE in
jax-ml/jax docs/notebooks/shard_map.md's spirit and google/flaxformer's router), dense instead of
a gather. Constructs: top_k, approx_top_k, cumsum, sort (argsort), psum."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

INPUTS = ("logits", "h")
OUTPUTS = ("out", "position", "running", "order", "approx", "load")
SHAPES = {"logits": "N,E", "h": "N,E"}
MESH = (("data", 8),)


def route(logits, h):
    vals, idx = lax.top_k(logits, 2)
    _, approx = lax.approx_max_k(logits, 2)
    experts = logits.shape[-1]
    mask = (idx[:, :, None] == jnp.arange(experts)[None, None, :]).astype(jnp.float32)
    gates = jnp.sum(vals[:, :, None] * mask, axis=1)
    dispatch = jnp.sum(mask, axis=1)
    position = jnp.cumsum(dispatch, axis=0) * dispatch
    running = jnp.cumsum(vals[:, 0])
    order = jnp.argsort(idx[:, 0])
    out = gates * h
    load = lax.psum(jnp.sum(dispatch, axis=0), "data")
    return out, position, running, order, approx, load


def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), devices=jax.devices()[:data])
    return jax.jit(jax.shard_map(route, mesh=mesh, in_specs=(P("data"), P("data")),
                                 out_specs=(P("data"), P("data"), P("data"), P("data"),
                                            P("data"), P())))
