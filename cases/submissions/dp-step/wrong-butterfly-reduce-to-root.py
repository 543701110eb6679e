"""dp-step, WRONG: the gradients and loss are combined by a recursive-halving butterfly of ppermutes
(partner i xor 2^k each round, every device sends every round) but only the lower partner adds what it
receives: a REDUCE to device 0, never an all-reduce. Device 0 ends with the batch mean and the right
update; devices 1..7 update with partial sums. out_specs P() with check_vma=False, so JAX's
np.asarray reads device 0's copy; the 'replicated' w, b disagree across devices."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def reduce_to_root(t, n):
    i = jax.lax.axis_index("data")
    k = 1
    while k < n:
        got = jax.tree.map(lambda v: jax.lax.ppermute(v, "data", [(j, j ^ k) for j in range(n)]), t)
        lower = (i & k) == 0
        t = jax.tree.map(lambda a, g: jnp.where(lower, a + g, a), t, got)
        k *= 2
    return t


def make(data=8):
    def body(w, b, x, y, lr):
        def loss_fn(w, b):
            return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

        loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
        loss, gw, gb = jax.tree.map(lambda v: v / data, reduce_to_root((loss, gw, gb), data))
        return w - lr * gw, b - lr * gb, loss

    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
