"""dp-step, right (DDP gradient accumulation without no_sync): the block is cut into micro-batches of 2
rows (1 if the block's rows are odd); a lax.scan runs them, and -- as PyTorch DDP does when the
accumulation steps are not wrapped in no_sync() -- every micro-batch's loss and gradients are pmean'd over
'data' right away and accumulated; the sum is divided by the number of micro-batches. Same numbers as one
pmean at the end (the micro-batches are equal), just more collectives."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    rows = int(x.shape[0])
    mb = 2 if rows % 2 == 0 else 1
    nb = rows // mb
    xs, ys = x.reshape(nb, mb, -1), y.reshape(nb, mb, -1)
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def step(carry, xy):
        xm, ym = xy
        f = lambda w, b: jnp.mean(jnp.sum((xm @ w + b - ym) ** 2, axis=1))
        l, (gw, gb) = jax.value_and_grad(f, argnums=(0, 1))(wv, bv)
        l, gw, gb = jax.lax.pmean((l, gw, gb), "data")            # all-reduce every micro-batch
        return jax.tree.map(jnp.add, carry, (l, gw, gb)), None

    zero = (jnp.zeros((), jnp.float32), jnp.zeros_like(w), jnp.zeros_like(b))
    (l, gw, gb), _ = jax.lax.scan(step, zero, (xs, ys))
    return w - lr * gw / nb, b - lr * gb / nb, l / nb


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))
