"""dp-step, WRONG: loss and gradients pmean'd over 'data' correctly, but only device 0 applies the
update ("only rank 0 touches the parameters"); devices 1..7 return the old w, b. out_specs P() with
check_vma=False: JAX's np.asarray reads device 0's copy, so the numbers look right, but the 'replicated'
w, b JAX returns hold the OLD parameters on 7 of 8 devices (the next step trains on stale weights).
The exercise: "w and b end replicated on all 8 devices"."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    root = jax.lax.axis_index("data") == 0
    return jnp.where(root, w - lr * gw, w), jnp.where(root, b - lr * gb, b), loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
