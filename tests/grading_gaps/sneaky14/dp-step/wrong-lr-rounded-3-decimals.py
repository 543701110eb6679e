"""dp-step wrong-lr-rounded-3-decimals: the textbook step (pcast, value_and_grad, one pmean over
'data'), but the step size is first "cleaned" with lr = jnp.round(lr, 3) (to strip float noise).
Every case's lr (0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.001) and its doubles and 256x multiples have
at most 3 decimals, so the cases and the draws see the exact lr. Truly wrong: lr = 0.0125 steps
with 0.012 (or 0.013), lr = 0.1234 with 0.123 -- the update off by 4% / 0.3% (truth14.py lr).
Control of wrong-lr-rounded-3-significant-digits: the grader FAILs it (the lr / 256 draw:
0.001 / 256 rounds to 0). Kept as a correctly judged entry."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    lr = jnp.round(lr, 3)
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
