"""dp-step wrong-lr-rounded-3-significant-digits: the textbook step, but the step size is first rounded
to 3 significant digits (lr = round(lr / 10^(e-2)) 10^(e-2), e = floor(log10 lr): "as the config prints it").
Every case's lr has 1 significant digit (0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.001), and the grader's
lr variants (doubled, times 256, over 256: 2.56, 76.8, 3.90625e-4 -> 3.91e-4) have at most 3 or
move the update by < 0.2% of an update that is tiny at the small draw. Truly wrong: lr = 0.12345
steps with 0.123, lr = 0.0012345 with 0.00123 (0.4% of the update; truth14.py lr). lr is the one
float input the grader never draws (kept, then scaled by powers of two). (The control
wrong-lr-rounded-3-decimals, rounding to 3 decimals, fails at the lr / 256 draw.)"""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    e = jnp.floor(jnp.log10(lr)) - 2           # lr to 3 significant digits
    q = 10.0 ** e
    lr = jnp.round(lr / q) * q
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
