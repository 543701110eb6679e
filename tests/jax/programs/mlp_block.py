"""A transformer MLP block's training step, as a user would write it in JAX: pre-layer-norm
(mean and variance over the features, rsqrt), a tensor-parallel MLP with GELU (w1 split by
columns, w2 by rows over 'model', one psum), the residual; MSE against a target, one SGD step.
The batch is split over 'data' (mesh data=2, model=4: 8 CPU devices).

make(...) uses the tanh GELU (jax.nn.gelu's default, approximate=True), make_erf(...) the exact
one (approximate=False: erf)."""
import functools
import os

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x", "y", "gamma", "beta", "w1", "b1", "w2", "b2", "lr")
OUTPUTS = ("gamma", "beta", "w1", "b1", "w2", "b2", "loss")
SHAPES = {"x": "B,D", "y": "B,D", "gamma": "D", "beta": "D", "w1": "D,H", "b1": "H",
          "w2": "H,D", "b2": "D", "lr": ""}
MESH = (("data", 2), ("model", 4))


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + eps) * gamma + beta


def block(x, gamma, beta, w1, b1, w2, b2, approximate):
    h = jax.nn.gelu(layer_norm(x, gamma, beta) @ w1 + b1, approximate=approximate)
    return x + jax.lax.psum(h @ w2, "model") + b2


def body(x, y, gamma, beta, w1, b1, w2, b2, lr, approximate=True):
    params = (gamma, beta, w1, b1, w2, b2)
    # invariant over 'data': each data row of the mesh differentiates its own rows' loss
    varying = jax.lax.pcast(params, "data", to="varying")

    def loss_fn(params):
        out = block(x, *params, approximate=approximate)
        return jnp.mean(jnp.sum((out - y) ** 2, axis=-1))

    loss, grads = jax.value_and_grad(loss_fn)(varying)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    return (*(p - lr * g for p, g in zip(params, grads)), loss)


def make(data=2, model=4, approximate=True):
    mesh = jax.make_mesh((data, model), ("data", "model"),
                         axis_types=(AxisType.Auto,) * 2, devices=jax.devices()[:data * model])
    specs = (P("data", None), P("data", None), P(), P(), P(None, "model"), P("model"),
             P("model", None), P(), P())
    out_specs = (P(), P(), P(None, "model"), P("model"), P("model", None), P(), P())
    return jax.jit(jax.shard_map(functools.partial(body, approximate=approximate), mesh=mesh,
                                 in_specs=specs, out_specs=out_specs))


def make_erf(data=2, model=4):
    return make(data, model, approximate=False)
