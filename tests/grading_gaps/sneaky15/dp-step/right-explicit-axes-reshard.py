"""dp-step, RIGHT: the modern "sharding in types" style -- a mesh of AxisType.Explicit, the inputs
placed with jax.sharding.reshard inside the jit (x and y split by rows over 'data', w and b
replicated), then the textbook shard_map body: value_and_grad of the local loss, one pmean of the
loss and the gradients over 'data', the step."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P


def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), axis_types=(AxisType.Explicit,),
                         devices=jax.devices()[:data])

    def body(w, b, x, y, lr):
        def loss_fn(w, b):
            return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
        w_, b_ = jax.lax.pcast((w, b), "data", to="varying")
        loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w_, b_)
        loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
        return w - lr * gw, b - lr * gb, loss

    step = jax.shard_map(body, mesh=mesh, in_specs=(P(), P(), P("data"), P("data"), P()),
                         out_specs=(P(), P(), P()))

    def f(w, b, x, y, lr):
        x = jax.sharding.reshard(x, NamedSharding(mesh, P("data")))
        y = jax.sharding.reshard(y, NamedSharding(mesh, P("data")))
        return step(w, b, x, y, lr)

    return jax.jit(f)
