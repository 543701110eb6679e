"""dp-step, right (pmap-style layout): x and y reshaped outside to (n, N/n, ...) -- a leading device axis,
as pmap code lays batches out -- and split over 'data' along that axis; each device squeezes its
(1, N/n, D) slab to its rows, computes loss and gradients, one pmean over 'data'."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, xs, ys, lr):
    x, y = xs[0], ys[0]
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")
    f = lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    loss, (gw, gb) = jax.value_and_grad(f, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    sm = jax.shard_map(body, mesh=mesh_of(data), in_specs=(P(), P(), P("data"), P("data"), P()),
                       out_specs=(P(), P(), P()))

    def step(w, b, x, y, lr):
        return sm(w, b, x.reshape(data, -1, x.shape[1]), y.reshape(data, -1, y.shape[1]), lr)

    return jax.jit(step)
