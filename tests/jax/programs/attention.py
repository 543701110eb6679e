"""A small multi-head causal self-attention layer's training step, as a user would write it in
JAX: q/k/v projections of the tokens, split into heads, scores q k^T / sqrt(dk) with batch
dimensions (sequence, head), a causal mask (iota, where), softmax over the keys, the output
projection summed over heads (psum over 'model'), the residual, MSE against a target,
value_and_grad, pmean over 'data', one SGD step. Mesh data=4, model=2 (8 CPU devices).

The inputs are matrices, as meshrun's cases hold only arrays of rank 0-2: x and y are (N, D)
tokens, N/SEQ sequences of SEQ tokens each, split over 'data' by whole sequences; the
projections are Megatron's fused layout, wq/wk/wv (D, H*HEAD) with the heads' columns split
over 'model', wo (H*HEAD, D) split by rows. The body reshapes them into (sequences, SEQ, D) and
(D, heads, HEAD)."""
import os

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

SEQ = 4   # tokens per sequence
HEAD = 2  # the head dimension

INPUTS = ("x", "y", "wq", "wk", "wv", "wo", "lr")
OUTPUTS = ("wq", "wk", "wv", "wo", "loss")
SHAPES = {"x": "N,D", "y": "N,D", "wq": "D,E", "wk": "D,E", "wv": "D,E", "wo": "E,D", "lr": ""}
MESH = (("data", 4), ("model", 2))


def attention(x, wq, wk, wv, wo):
    d = x.shape[-1]
    xs = x.reshape(-1, SEQ, d)                       # (b, t, d)
    heads = lambda w: w.reshape(d, -1, HEAD)         # (d, h, e)  # noqa: E731
    q = jnp.einsum("btd,dhe->bhte", xs, heads(wq))
    k = jnp.einsum("btd,dhe->bhte", xs, heads(wk))
    v = jnp.einsum("btd,dhe->bhte", xs, heads(wv))
    s = jnp.einsum("bhte,bhse->bhts", q, k) / jnp.sqrt(jnp.float32(HEAD))
    causal = jnp.arange(SEQ)[:, None] >= jnp.arange(SEQ)[None, :]
    s = jnp.where(causal, s, -1e9)
    a = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bhts,bhse->bhte", a, v)
    out = jnp.einsum("bhte,hed->btd", o, wo.reshape(-1, HEAD, d))
    return jax.lax.psum(out, "model").reshape(x.shape)


def body(x, y, wq, wk, wv, wo, lr):
    params = (wq, wk, wv, wo)
    varying = jax.lax.pcast(params, "data", to="varying")

    def loss_fn(params):
        return jnp.mean(jnp.sum((x + attention(x, *params) - y) ** 2, axis=-1))

    loss, grads = jax.value_and_grad(loss_fn)(varying)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    return (*(p - lr * g for p, g in zip(params, grads)), loss)


def make(data=4, model=2):
    mesh = jax.make_mesh((data, model), ("data", "model"),
                         axis_types=(AxisType.Auto,) * 2, devices=jax.devices()[:data * model])
    cols, rows = P(None, "model"), P("model", None)
    return jax.jit(jax.shard_map(body, mesh=mesh,
                                 in_specs=(P("data"), P("data"), cols, cols, cols, rows, P()),
                                 out_specs=(cols, cols, cols, rows, P())))
