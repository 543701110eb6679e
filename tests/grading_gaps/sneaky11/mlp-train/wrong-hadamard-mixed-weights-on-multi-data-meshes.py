"""mlp-train, WRONG (full weights on every device, mixed, only where the weights' receive budget is not
judged): the mesh is static, so the program cheats only when data > 1 and model > 1 (meshes 2x4, 4x2 --
grading.md: with more than one 'data' device the pmean alone receives a block's worth, so receives_little
does not judge the weights there) and is honest on 1x8 and 8x1. Cheating: every device psums its
w1, b1, w2 blocks times its column of a Hadamard matrix over 'model' (all of w1, b1, w2, mixed, on every
device), computes EVERY hidden unit and the WHOLE output itself (no partial outputs summed), and takes
value_and_grad through the mixing (its transpose hands each device the gradient of its own blocks)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def hadamard(n):
    k = jax.lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n, n), 1)
    return 1.0 - 2.0 * (jax.lax.population_count(k & j) & 1).astype(jnp.float32)


def honest(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def mixed(m, x, y, w1, b1, w2, b2):
    H = hadamard(m)
    c = H[:, jax.lax.axis_index("model")]
    T1 = jax.lax.psum(c[:, None, None] * w1[None], "model")
    Tb = jax.lax.psum(c[:, None] * b1[None], "model")
    T2 = jax.lax.psum(c[:, None, None] * w2[None], "model")
    Z = jnp.einsum("bd,kdh->kbh", x, T1) + Tb[:, None, :]
    h_all = jax.nn.relu(jnp.einsum("jk,kbh->jbh", H, Z) / m)             # every hidden unit
    out = jnp.einsum("kbh,kho->bo", jnp.einsum("kj,jbh->kbh", H, h_all), T2) / m + b2   # whole output
    return jnp.mean(jnp.sum((out - y) ** 2, axis=1))


def make(data=2, model=4):
    cheat = data > 1 and model > 1
    loss_fn = (lambda *a: mixed(model, *a)) if cheat else honest

    def body(x, y, w1, b1, w2, b2, lr):
        params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")
        loss, grads = jax.value_and_grad(lambda *p: loss_fn(x, y, *p), argnums=(0, 1, 2, 3))(*params)
        if cheat:      # every model device computed the same full loss: the psum's transpose summed model copies
            grads = jax.tree.map(lambda g: g / model, grads)
        loss, grads = jax.lax.pmean((loss, grads), "data")
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
        in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P(), P()),
        out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()), check_vma=False))
