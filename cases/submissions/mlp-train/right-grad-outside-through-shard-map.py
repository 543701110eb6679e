"""mlp-train, right: the shard_map computes only the loss (forward with a psum over 'model', the rows'
mean with a pmean over 'data'); jax.value_and_grad is taken OUTSIDE, through the shard_map (JAX
transposes it into a backward shard_map on the same blocks, whose transposed pmean/psum reduce the
gradients over 'data'), and the SGD update p - lr * g is applied outside on the sharded params."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def local_loss(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jax.lax.pmean(jnp.mean(jnp.sum((out - y) ** 2, axis=1)), "data")


def make(data=2, model=4):
    loss_map = jax.shard_map(local_loss, mesh=mesh_of(data, model),
                             in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                                       P("model", None), P()), out_specs=P())

    def step(x, y, w1, b1, w2, b2, lr):
        loss, g = jax.value_and_grad(lambda *p: loss_map(x, y, *p), argnums=(0, 1, 2, 3))(w1, b1, w2, b2)
        return (*(p - lr * gg for p, gg in zip((w1, b1, w2, b2), g)), loss)

    return jax.jit(step)
