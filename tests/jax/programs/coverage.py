"""The primitives the other programs do not reach, in one training step on a 2x4 mesh with a
tuple-of-axes spec: x split over ('data', 'model') together, a custom_vjp, pad and concatenate
under jax.grad (their transposes are slice and split), min/abs/sign/log1p/logistic/erf/pow,
ne/le and select_n, expand_dims/squeeze, reduce_min, a pmean over both axes, and the
collectives ppermute, psum_scatter, all_to_all, all_gather, with axis_index and dynamic_slice,
argmax and iota. Not an exercise: a test that every one of them runs as JAX computes it."""
import os

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x", "w", "lr")
OUTPUTS = ("w", "loss", "moved", "picked", "argmax")
SHAPES = {"x": "N,D", "w": "D,H", "lr": ""}
MESH = (("data", 2), ("model", 4))
BOTH = ("data", "model")


@jax.custom_vjp
def double(h):
    return h * 2.0


def _double_fwd(h):
    return double(h), None


def _double_bwd(_, g):
    return (g * 2.0,)


double.defvjp(_double_fwd, _double_bwd)


def cols_of(a):
    return lax.broadcasted_iota(jnp.float32, a.shape, 0) * 0.25


def body(x, w, lr, model):
    wv = lax.pcast(w, BOTH, to="varying")

    def loss_fn(w):
        h = x @ w
        h = (jnp.minimum(h, 1.0) + jnp.abs(h) * jnp.sign(h) + jnp.log1p(jnp.abs(h))
             + jax.nn.sigmoid(h) + lax.erf(h))
        h = h + jnp.power(jnp.abs(h) + 1.0, 1.5)
        h = double(h)
        c = jnp.pad(h, ((0, 0), (1, 2)))
        c = jnp.concatenate([c, 2.0 * lax.slice_in_dim(c, 1, 2, axis=1)], axis=1)
        c = jnp.expand_dims(c, 0).squeeze(0)
        m = (jnp.min(c) + jnp.mean(jnp.where(c != 0.0, 1.0, 0.0))
             + jnp.mean(jnp.where(c <= 1.0, c, 0.0)))
        return lax.pmean(jnp.mean(c * c) + m, BOTH)

    loss, g = jax.value_and_grad(loss_fn)(wv)
    g = lax.pmean(g, BOTH)
    shifted = lax.ppermute(x, "model", [(i, (i + 1) % model) for i in range(model)])
    stacked = jnp.concatenate([x] * model, axis=0)
    scattered = lax.psum_scatter(stacked, "model", scatter_dimension=0, tiled=True)
    swapped = lax.all_to_all(stacked * (1.0 + cols_of(stacked)), "model", 0, 0, tiled=True)
    swapped = lax.slice_in_dim(swapped, x.shape[0], 2 * x.shape[0], axis=0)  # the 2nd block
    gathered = lax.all_gather(x, "data", axis=0, tiled=True)
    picked = lax.dynamic_slice_in_dim(gathered, lax.axis_index("model"), 1, axis=0)
    cols = jnp.arange(x.shape[1], dtype=jnp.float32)
    am = jnp.argmax(x * cols, axis=1).astype(jnp.float32)
    return w - lr * g, loss, shifted + scattered - swapped, picked, am


def make(data=2, model=4):
    mesh = jax.make_mesh((data, model), BOTH, axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])
    return jax.jit(jax.shard_map(lambda x, w, lr: body(x, w, lr, model), mesh=mesh,
                                 in_specs=(P(BOTH), P(), P()),
                                 out_specs=(P(), P(), P(BOTH), P(BOTH), P(BOTH))))
