"""dp-step, right: the gradients and loss all-reduced by recursive doubling of the program's own -- log2(n)
rounds, each a ppermute with the partner i xor 2^k and an add -- then divided by n (a butterfly
all-reduce; every device ends with the same sums)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def butterfly_mean(t, n):
    k = 1
    while k < n:
        perm = [(i, i ^ k) for i in range(n)]
        t = jax.tree.map(lambda a, b: a + b, t, jax.lax.ppermute(t, "data", perm))
        k *= 2
    return jax.tree.map(lambda a: a / n, t)


def body(w, b, x, y, lr, n):
    f = lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")
    loss, (gw, gb) = jax.value_and_grad(f, argnums=(0, 1))(wv, bv)
    loss, gw, gb = butterfly_mean((loss, gw, gb), n)
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(lambda *a: body(*a, data), mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
