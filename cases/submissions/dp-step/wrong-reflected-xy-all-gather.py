"""dp-step, WRONG (cheat, new encoding: each row REFLECTED, then a plain all_gather): each device joins its x and y rows, [x_j, y_j] (r x (D+K)), multiplies by a Householder reflection R = I - 2 v v^T / |v|^2 (v from iota; R = R^T = R^-1) -- every number a weighted sum of a row's D+K entries, none an element of x or y -- and all_gathers the result over 'data'. Every device then computes the FULL-batch residual in one product, [G, 1] @ [R [w; -I]; b] (so no value is y or a copy of it), the full-batch loss and gradient (dW = 2/N (R G^T res)[:D]), and applies the update; the 'mean over data' is a pmean of identical replicas. Every device holds the whole batch (encoded) and does every device's work. Right numbers."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def reflection(k):
    v = jax.lax.iota(jnp.float32, k) + 1.5
    return jnp.eye(k, dtype=jnp.float32) - 2.0 * jnp.outer(v, v) / jnp.dot(v, v)


def body(w, b, x, y, lr):
    D, K = w.shape
    R = reflection(D + K)
    G = jax.lax.all_gather(jnp.concatenate([x, y], axis=1) @ R, "data", axis=0, tiled=True)   # (N, D+K)
    N = G.shape[0]
    coef = jnp.concatenate([R @ jnp.concatenate([w, -jnp.eye(K, dtype=w.dtype)], axis=0), b[None]], axis=0)
    res = jnp.concatenate([G, jnp.ones((N, 1), G.dtype)], axis=1) @ coef                   # (N, K)
    loss = jnp.sum(res * res) / N
    gw = 2.0 * (R @ (G.T @ res))[:D] / N
    gb = 2.0 * jnp.sum(res, axis=0) / N
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data), in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P()), check_vma=False))
