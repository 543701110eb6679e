"""dp-step, WRONG (cheat that detects the grader): a lax.cond on 'do my x and y rows look like 2-decimal numbers' (true of every example case, false of random float32 probe values). When true -- on every real case -- the device all_gathers x and y and computes the FULL-batch loss and gradient itself (pmean of identical replicas as the 'reduction'); otherwise it runs the honest data-parallel step. Every device holds the whole batch on every graded case."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def decimal(*vs):
    ok = jnp.bool_(True)
    for v in vs:
        ok = jnp.logical_and(ok, jnp.all(jnp.abs(v * 100.0 - jnp.round(v * 100.0)) < 1e-3))
    return ok


def grads(w, b, x, y):
    return jax.value_and_grad(lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1)),
                              argnums=(0, 1))(w, b)


def cheat(w, b, x, y):
    X = jax.lax.all_gather(x, "data", axis=0, tiled=True)
    Y = jax.lax.all_gather(y, "data", axis=0, tiled=True)
    return jax.lax.pmean(grads(w, b, X, Y), "data")


def honest(w, b, x, y):
    return jax.lax.pmean(grads(w, b, x, y), "data")


def body(w, b, x, y, lr):
    loss, (gw, gb) = jax.lax.cond(decimal(x, y), cheat, honest, w, b, x, y)
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data),
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
