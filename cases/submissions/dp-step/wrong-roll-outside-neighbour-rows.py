"""dp-step wrong-roll-outside-neighbour-rows, a cheat: x and y are rolled by one block outside the shard_map and handed
in as two more operands, so each device receives its own rows AND its neighbour's rows and computes the gradient of
both (every row's gradient computed on two devices), averaging the two before the pmean. Right numbers; each device
holds and works on another device's block."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def make(data):
    mesh = Mesh(np.array(jax.devices()[:data]), ("data",))

    def grads(w, b, x, y):
        r = x @ w + b - y
        return 2.0 * x.T @ r, 2.0 * jnp.sum(r, axis=0), jnp.sum(r * r)

    def body(w, b, x, y, xr, yr, lr):
        n_loc = x.shape[0] * data
        g1 = grads(w, b, x, y)
        g2 = grads(w, b, xr, yr)
        gw, gb, l = [lax.pmean((u + v) / 2.0, "data") * data / n_loc for u, v in zip(g1, g2)]
        return w - lr * gw, b - lr * gb, l

    sm = jax.shard_map(body, mesh=mesh, in_specs=(P(), P(), P("data"), P("data"), P("data"), P("data"), P()),
                       out_specs=(P(), P(), P()))

    def f(w, b, x, y, lr):
        k = x.shape[0] // data
        xr = jnp.concatenate([x[k:], x[:k]], axis=0)
        yr = jnp.concatenate([y[k:], y[:k]], axis=0)
        return sm(w, b, x, y, xr, yr, lr)

    return jax.jit(f)
