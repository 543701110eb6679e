"""Softmax cross-entropy classification, a data-parallel training step as a user would write it
in JAX: logits = x w + b, log_softmax (max-shifted, stop_gradient), the mean negative
log-likelihood of integer labels (one_hot of an int32 input), value_and_grad, pmean over 'data',
one SGD step; and the batch's accuracy (argmax). Mesh data=8 (8 CPU devices)."""
import os

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("w", "b", "x", "labels", "lr")
OUTPUTS = ("w", "b", "loss", "accuracy")
SHAPES = {"w": "D,K", "b": "K", "x": "N,D", "labels": "N", "lr": ""}
DTYPES = {"labels": "i32"}
MESH = (("data", 8),)


def body(w, b, x, labels, lr):
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def loss_fn(w, b):
        logits = x @ w + b
        logp = jax.nn.log_softmax(logits, axis=-1)
        onehot = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
        return -jnp.mean(jnp.sum(onehot * logp, axis=-1)), logits

    (loss, logits), (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1), has_aux=True)(wv, bv)
    correct = jnp.mean((jnp.argmax(logits, axis=-1) == labels).astype(jnp.float32))
    loss, gw, gb, acc = jax.lax.pmean((loss, gw, gb, correct), "data")
    return w - lr * gw, b - lr * gb, loss, acc


def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:data])
    return jax.jit(jax.shard_map(body, mesh=mesh,
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P(), P())))
