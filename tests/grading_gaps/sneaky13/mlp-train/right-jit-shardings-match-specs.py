"""mlp-train right-jit-shardings-match-specs: the gallery's textbook step, with jax.jit also given
in_shardings/out_shardings equal to the shard_map's specs (NamedShardings on the same mesh, so no
re-layout happens) and donate_argnums for the parameters -- the usual production wrapper."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


IN = (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P())
OUT = (P(None, "model"), P("model"), P("model", None), P(), P())


def loss_fn(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def body(x, y, w1, b1, w2, b2, lr):
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
    loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    ns = lambda specs: tuple(NamedSharding(mesh, s) for s in specs)
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=IN, out_specs=OUT),
                   in_shardings=ns(IN), out_shardings=ns(OUT))
