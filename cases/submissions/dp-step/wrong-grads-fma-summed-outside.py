"""dp-step wrong-grads-fma-summed-outside: the body computes each device's own loss and gradients
and a decoy pmean of zeros; the per-device gradients are returned stacked (P('data')) and averaged
OUTSIDE the shard_map as a chain acc = g_k * (1/n) + acc (each link one FMA), and the step applied
there. The mesh never combines the gradients: one device does the reduction outside."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y):
    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
    z = jax.lax.pmean((0.0 * loss, 0.0 * gw, 0.0 * gb), "data")   # decoy: zeros
    return (loss + z[0])[None], (gw + z[1])[None], (gb + z[2])[None]


def make(data=8):
    inner = jax.shard_map(body, mesh=mesh_of(data), in_specs=(P(), P(), P("data"), P("data")),
                          out_specs=(P("data"), P("data"), P("data")), check_vma=False)
    s = 1.0 / data

    def prog(w, b, x, y, lr):
        ls, gws, gbs = inner(w, b, x, y)
        gw, gb, loss = gws[0] * s, gbs[0] * s, ls[0] * s
        for k in range(1, data):
            gw = gws[k] * s + gw
            gb = gbs[k] * s + gb
            loss = ls[k] * s + loss
        return w - lr * gw, b - lr * gb, loss
    return jax.jit(prog)
