"""mlp-train, right (Megatron-LM style): the two conjugate operators written with jax.custom_vjp --
f: identity forward, psum over 'model' backward (on x's cotangent); g: psum over 'model' forward,
identity backward (on the partial outputs) -- the classic tensor-parallel MLP, value_and_grad through
them (check_vma off, as Megatron code has no varying types), one pmean over 'data'."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


@jax.custom_vjp
def f_copy(t):
    return t
f_copy.defvjp(lambda t: (t, None), lambda _, ct: (jax.lax.psum(ct, "model"),))


@jax.custom_vjp
def g_reduce(t):
    return jax.lax.psum(t, "model")
g_reduce.defvjp(lambda t: (jax.lax.psum(t, "model"), None), lambda _, ct: (ct,))


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(f_copy(x) @ w1 + b1)
    out = g_reduce(h @ w2) + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2, lr):
    loss, grads = jax.value_and_grad(loss_fn, argnums=(0, 2, 3, 4, 5))(x, y, w1, b1, w2, b2)
    grads = grads[1:]
    loss, grads = jax.lax.pmean((loss, grads), "data")
    return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
        in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P()),
        out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()), check_vma=False))
