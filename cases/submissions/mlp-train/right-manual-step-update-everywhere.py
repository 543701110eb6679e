"""mlp-train, right (control for the *-rank0 ones): the step of the problem statement by hand (no
autodiff), psum over 'model', one pmean over 'data', every device applies the update; check_vma=False."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


SPECS = dict(in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                       P("model", None), P(), P()),
             out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()))


def step(x, y, w1, b1, w2, b2):
    """The step of the problem statement, by hand: loss and the four local gradients, pmean'd over
    'data' (the partial outputs psum'd over 'model')."""
    z = x @ w1 + b1
    h = jnp.maximum(z, 0.0)
    out = jax.lax.psum(h @ w2, "model") + b2
    r = out - y
    loss = jnp.sum(r * r) / x.shape[0]
    g = 2.0 * r / x.shape[0]
    dw2 = h.T @ g
    db2 = jnp.sum(g, axis=0)
    dz = (g @ w2.T) * (z > 0)
    dw1 = x.T @ dz
    db1 = jnp.sum(dz, axis=0)
    return jax.lax.pmean((loss, (dw1, db1, dw2, db2)), "data")


def body(x, y, w1, b1, w2, b2, lr):
    params = (w1, b1, w2, b2)
    loss, grads = step(x, y, w1, b1, w2, b2)
    new = tuple(p - lr * g for p, g in zip(params, grads))
    return (*new, loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model), check_vma=False, **SPECS))
