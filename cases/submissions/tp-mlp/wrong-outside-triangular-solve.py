"""tp-mlp wrong-outside-triangular-solve, a cheat: the whole first layer, hidden = relu(x w1 + b1) for ALL hidden
units, is computed outside the shard_map on one device, its product written as a unit lower-triangular solve
(X A = [0 | v] with A = [[I, 0], [-W, I]] gives X = [v W | v]) so no dot_general or reduction appears; the shard_map
receives the blocks as asked plus the finished hidden split by columns, and only does the second layer (psum of
h_blk w2_blk, b2 after): w1's whole product done unsplit on one device."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def _solve_matmul(v, W):
    """v @ W by one triangular solve."""
    R, C = W.shape
    B = v.shape[0]
    A = jnp.concatenate([jnp.concatenate([jnp.eye(C, dtype=jnp.float32), jnp.zeros((C, R), jnp.float32)], axis=1),
                         jnp.concatenate([-W, jnp.eye(R, dtype=jnp.float32)], axis=1)], axis=0)
    rhs = jnp.concatenate([jnp.zeros((B, C), jnp.float32), v], axis=1)
    return lax.linalg.triangular_solve(A, rhs, left_side=False, lower=True, unit_diagonal=True)[:, :C]


def make(model):
    mesh = Mesh(np.array(jax.devices()[:model]), ("model",))

    def body(x, w1, b1, w2, b2, hid):
        o = lax.psum(hid @ w2, "model") + b2
        return o + 0.0 * w1[0, 0] * b1[0] * x[0, 0], hid

    sm = jax.shard_map(body, mesh=mesh,
                       in_specs=(P(), P(None, "model"), P("model"), P("model", None), P(), P(None, "model")),
                       out_specs=(P(), P(None, "model")), check_vma=False)

    def f(x, w1, b1, w2, b2):
        xb = jnp.concatenate([x, jnp.ones((x.shape[0], 1), jnp.float32)], axis=1)
        hid = jnp.maximum(_solve_matmul(xb, jnp.concatenate([w1, b1[None, :]], axis=0)), 0.0)
        return sm(x, w1, b1, w2, b2, hid)

    return jax.jit(f)
