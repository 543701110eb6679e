"""matmul-2d, WRONG (cheat, new encoding: both inputs MIXED across devices by psums): over 'model' each device multiplies its w columns by its column of the m x m orthonormal DCT-II matrix Q and psums the stack, receiving T_k = sum_j Q[k, j] w_j -- every number a weighted sum of m devices' columns, none an element, a scaled copy or an affine image; over 'data' the same with a d x d Sylvester-Hadamard matrix for x's rows, X_k = sum_i H[k, i] x_i. Since Q^T Q = I and H^T H = d I, every device then computes the WHOLE out = x @ w, out_{i', j'} = (1/d) sum_k H[i', k] sum_l Q[l, j'] (X_k @ T_l), and slices its own block: every device holds (encoded) all of x and all of w and does every device's product, with collectives where the exercise asks for none. Right numbers."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def hadamard(n):
    # built from iota inside the traced function (no closed-over constant): H[k, j] = (-1)^popcount(k & j)
    k = jax.lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n, n), 1)
    return 1.0 - 2.0 * (jax.lax.population_count(k & j) & 1).astype(jnp.float32)


def orthogonal(m):
    # the orthonormal DCT-II matrix, built from iota inside the traced function (no constant)
    k = jax.lax.broadcasted_iota(jnp.int32, (m, m), 0).astype(jnp.float32)
    j = jax.lax.broadcasted_iota(jnp.int32, (m, m), 1).astype(jnp.float32)
    scale = jnp.where(k == 0, jnp.sqrt(1.0 / m), jnp.sqrt(2.0 / m))
    return scale * jnp.cos(jnp.pi * (2.0 * j + 1.0) * k / (2.0 * m))


def body(d, m, x, w):
    H = hadamard(d); Q = orthogonal(m)
    i = jax.lax.axis_index("data"); j = jax.lax.axis_index("model")
    X = jax.lax.psum(H[:, i][:, None, None] * x[None], "data")     # (d, r, D)
    T = jax.lax.psum(Q[:, j][:, None, None] * w[None], "model")    # (m, D, c)
    prod = jnp.einsum("krd,ldc->klrc", X, T)                        # mixed products
    full = jnp.einsum("ik,lj,klrc->irjc", H, Q, prod) / d           # (d, r, m, c): all of out
    r, c = x.shape[0], w.shape[1]
    return jax.lax.dynamic_slice(full, (i, 0, j, 0), (1, r, 1, c)).reshape(r, c)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(lambda x, w: body(data, model, x, w), mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model"), check_vma=False))
