"""matmul-2d, WRONG (cheat, the product outside the mesh, on MIXED inputs): the body multiplies nothing: it psums its x rows weighted by its column of a d x d Sylvester-Hadamard matrix over 'data', and its w columns weighted by its column of an m x m one over 'model' (H from iota, +-1), getting mixtures X_k = sum_i H[k, i] x_i and T_l = sum_j H[l, j] w_j -- no number an element -- and hands them back replicated through a product with an identity scaled by (1 + 0 * x[0, 0]). OUTSIDE the shard_map, on one device, the whole out is computed from the mixtures (H^T H = n I): out block (i, j) = (1/(d m)) sum_k sum_l H[i, k] H[j, l] (X_k @ T_l). No device in the mesh computes any product; the sharded matmul never happens. Right numbers."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def hadamard(n):
    k = jax.lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n, n), 1)
    return 1.0 - 2.0 * (jax.lax.population_count(k & j) & 1).astype(jnp.float32)


def make(data=2, model=4):
    d, m = data, model

    def body(x, w):
        one = 1.0 + 0.0 * x[0, 0]
        X = jax.lax.psum(hadamard(d)[:, jax.lax.axis_index("data")][:, None, None] * x[None], "data")
        T = jax.lax.psum(hadamard(m)[:, jax.lax.axis_index("model")][:, None, None] * w[None], "model")
        X = jnp.einsum("krd,de->kre", X, jnp.eye(X.shape[2]) * one)
        T = jnp.einsum("ldc,ce->lde", T, jnp.eye(T.shape[2]) * one)
        return X, T

    sm = jax.shard_map(body, mesh=mesh_of(d, m), in_specs=(P("data", None), P(None, "model")),
                       out_specs=(P(), P()), check_vma=False)

    def prog(x, w):
        X, T = sm(x, w)
        prod = jnp.einsum("krd,ldc->klrc", X, T)
        full = jnp.einsum("ik,jl,klrc->irjc", hadamard(d), hadamard(m), prod) / (d * m)
        return full.reshape(x.shape[0], w.shape[1])

    return jax.jit(prog)
