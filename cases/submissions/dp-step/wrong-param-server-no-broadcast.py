"""dp-step, WRONG: a "parameter server" on device 0: each device k = 1..n-1 sends its loss and gradients
to device 0 (one ppermute k -> 0 each), device 0 sums them with its own and applies the mean-gradient
update; nobody sends the result back. Devices 1..7 update with their own rows' gradient alone.
check_vma=False: JAX's np.asarray reads device 0's copy (right numbers); the replicated w, b disagree."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(data=8):
    def body(w, b, x, y, lr):
        def loss_fn(w, b):
            return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

        mine = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
        total = mine
        for k in range(1, data):
            got = jax.tree.map(lambda v: jax.lax.ppermute(v, "data", [(k, 0)]), mine)
            total = jax.tree.map(jnp.add, total, got)
        is0 = jax.lax.axis_index("data") == 0
        loss, (gw, gb) = jax.tree.map(lambda t, m: jnp.where(is0, t / data, m), total, mine)
        return w - lr * gw, b - lr * gb, loss

    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
