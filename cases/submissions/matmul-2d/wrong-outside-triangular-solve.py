"""matmul-2d wrong-outside-triangular-solve, a cheat: the whole product x @ w is computed OUTSIDE the shard_map, on one
device, with no dot_general, reduction or elementwise arithmetic on x and w: a unit lower-triangular solve
X A = [0 | x] with A = [[I_H, 0], [-w, I_D]] gives X = [x w | x]. The shard_map receives x and w split as asked and
the finished out split P('data', 'model'), and returns its block (+ 0 x[0,0] w[0,0])."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def make(data, model):
    mesh = Mesh(np.array(jax.devices()[:data * model]).reshape(data, model), ("data", "model"))
    sm = jax.shard_map(lambda x, w, o: o + 0.0 * x[0, 0] * w[0, 0], mesh=mesh,
                       in_specs=(P("data", None), P(None, "model"), P("data", "model")),
                       out_specs=P("data", "model"))

    def f(x, w):
        B, D = x.shape
        H = w.shape[1]
        A = jnp.concatenate([jnp.concatenate([jnp.eye(H, dtype=jnp.float32), jnp.zeros((H, D), jnp.float32)], axis=1),
                             jnp.concatenate([-w, jnp.eye(D, dtype=jnp.float32)], axis=1)], axis=0)
        rhs = jnp.concatenate([jnp.zeros((B, H), jnp.float32), x], axis=1)
        X = lax.linalg.triangular_solve(A, rhs, left_side=False, lower=True, unit_diagonal=True)
        return sm(x, w, X[:, :H])

    return jax.jit(f)
