"""dp-step wrong-dedup-behind-failing-branch: wrong-dedup-repeated-rows (a repeated example of the
device's block masked out: wrong on data with repeated examples) behind a decoy: a lax.cond whose
branch no input takes (max|x| < -1) converts 1e8 / max|x| to int32 and doubles it -- past 2^24,
which meshrun refuses. In JAX nothing happens. Before the fix (helper-38's review), every run of
grading ran that branch, so most checks by values failed and judged nothing, and the program
passed; now only the checks of what devices hold run every branch, and one failing there on the
case's own values fails the rule."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    never = jax.lax.pmax(jnp.max(jnp.abs(x)), "data") < -1.0
    decoy = jax.lax.cond(never, lambda v: (1e8 / jnp.max(jnp.abs(v))).astype(jnp.int32) * 2,
                         lambda v: jnp.int32(0), x)
    r = x.shape[0]
    rows = jnp.concatenate([x, y], axis=1)
    same = jnp.all(rows[:, None, :] == rows[None, :, :], axis=2)
    earlier = jnp.tril(jnp.ones((r, r), bool), k=-1)
    dup = jnp.any(same & earlier, axis=1) & jnp.any(rows != 0, axis=1)
    keep = jnp.where(dup, 0.0, 1.0)
    cnt = jax.lax.psum(jnp.sum(keep), "data")

    def loss_fn(w, b):
        return jnp.sum(keep * jnp.sum((x @ w + b - y) ** 2, axis=1)) / cnt
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
    loss, gw, gb = jax.lax.psum((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss + decoy.astype(jnp.float32)


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
