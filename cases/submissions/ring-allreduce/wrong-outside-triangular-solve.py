"""ring-allreduce wrong-outside-triangular-solve, a cheat: the sum is computed OUTSIDE the shard_map, on one device,
as ones(1, n) @ (x viewed as n blocks) written as a unit lower-triangular solve (X A = [0 | v] with
A = [[I, 0], [-W, I]] gives v W), so no reduction or add appears; the body receives its block and the finished sum
(replicated), runs n - 1 decoy neighbour ppermutes of its block, and returns the sum (+ 0 times what it received)."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def _solve_matmul(v, W):
    R, C = W.shape
    B = v.shape[0]
    A = jnp.concatenate([jnp.concatenate([jnp.eye(C, dtype=jnp.float32), jnp.zeros((C, R), jnp.float32)], axis=1),
                         jnp.concatenate([-W, jnp.eye(R, dtype=jnp.float32)], axis=1)], axis=0)
    rhs = jnp.concatenate([jnp.zeros((B, C), jnp.float32), v], axis=1)
    return lax.linalg.triangular_solve(A, rhs, left_side=False, lower=True, unit_diagonal=True)[:, :C]


def make(ring):
    mesh = Mesh(np.array(jax.devices()[:ring]), ("ring",))
    perm = [(i, (i + 1) % ring) for i in range(ring)]

    def body(x, s):
        buf, seen = x, 0.0 * x
        for _ in range(ring - 1):
            buf = lax.ppermute(buf, "ring", perm)
            seen = seen + 0.0 * buf
        return s + seen

    sm = jax.shard_map(body, mesh=mesh, in_specs=(P("ring", None), P()), out_specs=P(), check_vma=False)

    def f(x):
        N, D = x.shape
        B = N // ring
        W = x.reshape(ring, B * D)
        s = _solve_matmul(jnp.ones((1, ring), jnp.float32), W).reshape(B, D)
        return sm(x, s)

    return jax.jit(f)
