"""dp-step, WRONG (numerically): a "convergence guard". The textbook step (value_and_grad, one
pmean over 'data'), except that when the global loss is below 1e-7 the model is taken as
converged and the parameters are returned unchanged (the loss as computed).

Why it is wrong: one SGD step must be taken whatever the loss; a model that nearly fits with a
small systematic bias (every target 1.5e-4 above the prediction: loss 6.75e-8 for K = 3) still has
a gradient, 3e-4 for b, and the step the guard skips moves b by lr times it -- 6e-5 at lr = 0.2,
outside the tolerance (truth15.py nearfit). Why the grader misses it: its draws are random numbers
on which the loss is of the order of the inputs' squares (at the 1/256 draw, about 1e-5), never
below 1e-7, and no case nearly fits (the smallest case loss is above 0.1)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    w_, b_ = jax.lax.pcast((w, b), "data", to="varying")
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w_, b_)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    step = jnp.where(loss < 1e-7, 0.0, lr)
    return w - step * gw, b - step * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
