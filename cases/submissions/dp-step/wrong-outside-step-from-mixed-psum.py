"""dp-step, WRONG (cheat, the whole step outside the mesh, on MIXED data): the body does no learning: it psums its x and y rows weighted by its column of a Sylvester-Hadamard matrix H (+-1, from iota) over 'data' -- mixtures X_k = sum_j H[k, j] x_j, no number an element -- and hands them back replicated through a product with an identity scaled by (1 + 0 * x[0, 0]). OUTSIDE the shard_map, on one device, the full-batch loss and gradient are computed from the mixtures (H^T H = n I: R_k = X_k w + s_k b - Y_k, loss = |R|^2 / (n N), dW = 2 X^T R / (n N), db = 2 sum_k s_k 1^T R_k / (n N)) and the update applied. The psum moves (encoded) data; no gradient is ever reduced across devices. Right numbers."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def hadamard(n):
    k = jax.lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n, n), 1)
    return 1.0 - 2.0 * (jax.lax.population_count(k & j) & 1).astype(jnp.float32)


def make(data=8):
    n = data

    def body(x, y):
        c = hadamard(n)[:, jax.lax.axis_index("data")]
        one = 1.0 + 0.0 * x[0, 0]
        X = jax.lax.psum(c[:, None, None] * x[None], "data")
        Y = jax.lax.psum(c[:, None, None] * y[None], "data")
        X = jnp.einsum("krd,de->kre", X, jnp.eye(X.shape[2]) * one)
        Y = jnp.einsum("krq,qe->kre", Y, jnp.eye(Y.shape[2]) * one)
        return X, Y

    sm = jax.shard_map(body, mesh=mesh_of(n), in_specs=(P("data"), P("data")), out_specs=(P(), P()),
                       check_vma=False)

    def prog(w, b, x, y, lr):
        X, Y = sm(x, y)
        H = hadamard(n); s = H.sum(axis=1)
        N = x.shape[0]
        R = jnp.einsum("krd,dq->krq", X, w) + s[:, None, None] * b - Y
        loss = jnp.sum(R * R) / (n * N)
        gw = 2.0 * jnp.einsum("krd,krq->dq", X, R) / (n * N)
        gb = 2.0 * jnp.einsum("k,krq->q", s, R) / (n * N)
        return w - lr * gw, b - lr * gb, loss

    return jax.jit(prog)
