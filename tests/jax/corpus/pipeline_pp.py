"""SPMD pipeline parallelism (GPipe): the inner layers' parameters stacked and split over
'stages', microbatches shifted down the pipeline with ppermute, each stage's state and the
outputs updated in place with `x.at[i].set(...)` -- a `scatter` (and `x[i]` a gather) in the
jaxpr, which meshrun refused before issue #49.

Source: jax-ml/jax docs/notebooks/shard_map.md, "Neural networks" / "SPMD pipeline parallelism
(PP)" (predict_pp, loss_pp, spmd_pipeline, shift), its S = 2 stages, with the microbatch size B
and the sizes below. Constructs: x.at[i].set (scatter), x[i] (gather / dynamic_slice),
jnp.roll, vmap over a stage's layers, ppermute, axis_index, pmean."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("w_first", "b_first", "ws", "bs", "w_last", "b_last", "x", "y")
OUTPUTS = ("loss",)
SHAPES = {"w_first": "F,F", "b_first": "F", "ws": "L,F,F", "bs": "L,F", "w_last": "F,F",
          "b_last": "F", "x": "N,F", "y": "N,F"}
MESH = (("stages", 2),)
B = 2  # examples per microbatch


def make(stages=2):
    S = stages
    mesh = jax.make_mesh((S,), ("stages",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:S])

    def spmd_pipeline(fn, stage_params, inputs, L, K, M):
        F = inputs.shape[-1]
        stage = jax.lax.axis_index("stages")
        outputs = jnp.zeros_like(inputs) * jnp.nan
        state = jnp.zeros((L // S, B, F)) * jnp.nan
        for i in range(M + L - 1):
            state = state.at[0].set(jnp.where(stage == 0, inputs[i % K], state[0]))
            state = jax.vmap(fn)(stage_params, state)
            outputs = outputs.at[(i - L + 1) % K].set(
                jnp.where(stage == S - 1, state[-1], outputs[(i - L + 1) % K]))
            state, inputs, outputs = shift(i, state, inputs, outputs, L, K)
        return jax.lax.ppermute(outputs, "stages", [(i, (i + 1) % S) for i in range(S)])

    def shift(i, state, inputs, outputs, L, K):
        def sh(x, d):
            return jax.lax.ppermute(x, "stages", [(j, (j + d) % S) for j in range(S)])
        state = jnp.roll(state, +1, axis=0).at[0].set(sh(state[-1], +1))
        if (i % K) == (-1 % K):
            inputs = sh(inputs, +1)
        if ((i - L + 1) % K) == (-1 % K):
            outputs = sh(outputs, +1)
        return state, inputs, outputs

    def loss_pp(w_first, b_first, ws, bs, w_last, b_last, x, y):
        L = ws.shape[0] * S  # inner layers in all
        K = x.shape[0] // B  # microbatches per stage
        M = K * S
        h = jax.nn.relu(jnp.dot(x, w_first) + b_first).reshape(K, B, -1)
        h = spmd_pipeline(lambda Wb, v: jax.nn.relu(v @ Wb[0] + Wb[1]), (ws, bs), h, L, K, M)
        pred = jnp.dot(h.reshape(K * B, -1), w_last) + b_last
        local = jnp.mean(jnp.sum((pred - y) ** 2, axis=-1))
        return jax.lax.pmean(local, "stages")

    return jax.jit(jax.shard_map(loss_pp, mesh=mesh,
                                 in_specs=(P(), P(), P("stages"), P("stages"), P(), P(),
                                           P("stages"), P("stages")),
                                 out_specs=P()))
