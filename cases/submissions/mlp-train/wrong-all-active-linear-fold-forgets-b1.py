"""mlp-train, WRONG (numerically): a "linear regime" shortcut in the forward pass. When no hidden
unit is clipped anywhere (the smallest preactivation over every device, a pmin over 'data' and
'model', is > 0), the MLP is linear and each device folds its layers: partial = x @ (w1_blk @
w2_blk), forgetting b1's term b1_blk @ w2_blk; otherwise the textbook partials. The loss and the
gradients (autodiff of whichever forward ran) are pmean'd over 'data' as the gallery's right.py.

Why it is wrong: when every unit is active (positive inputs and weights), out misses b1 @ w2:
the loss is wrong, b1 gets no gradient, and every other gradient is wrong (truth15.py active).
Why the grader misses it: no case has every unit active (the cases' active fractions are 0 to
0.66) and the draws' random signs make all B H preactivations positive with probability
2^-(B H): never at the cases' shapes (at least 64 preactivations)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


SPECS = dict(in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                       P("model", None), P(), P()),
             out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()))


def loss_fn(x, y, w1, b1, w2, b2):
    pre = x @ w1 + b1
    linear = jax.lax.pmin(jax.lax.stop_gradient(jnp.min(pre)), ("data", "model")) > 0
    partial = jnp.where(linear, x @ (w1 @ w2), jax.nn.relu(pre) @ w2)
    out = jax.lax.psum(partial, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2, lr):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), **SPECS))
