"""dp-step, right (control for wrong-butterfly-reduce-to-root): the same reduce to device 0 by a
recursive-halving butterfly of ppermutes, then a binomial-tree broadcast of the total back down
(ppermute from i to i + k for the devices that have it), so every device applies the same update."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def allreduce_via_root(t, n):
    i = jax.lax.axis_index("data")
    k = 1
    while k < n:
        got = jax.tree.map(lambda v: jax.lax.ppermute(v, "data", [(j, j ^ k) for j in range(n)]), t)
        lower = (i & k) == 0
        t = jax.tree.map(lambda a, g: jnp.where(lower, a + g, a), t, got)
        k *= 2
    k = n // 2
    while k >= 1:   # broadcast: device j (j % 2k == 0) sends to j + k
        got = jax.tree.map(lambda v: jax.lax.ppermute(v, "data", [(j, j + k) for j in range(0, n, 2 * k)]), t)
        receiver = (i % (2 * k)) == k
        t = jax.tree.map(lambda a, g: jnp.where(receiver, g, a), t, got)
        k //= 2
    return t


def make(data=8):
    def body(w, b, x, y, lr):
        def loss_fn(w, b):
            return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

        loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
        loss, gw, gb = jax.tree.map(lambda v: v / data, allreduce_via_root((loss, gw, gb), data))
        return w - lr * gw, b - lr * gb, loss

    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
