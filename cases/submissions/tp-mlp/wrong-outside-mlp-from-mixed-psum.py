"""tp-mlp, WRONG (cheat, the work outside the mesh on MIXED weights): the body computes its own hidden block (returned, split) and psums its w1, b1, w2 blocks weighted by its column of a Sylvester-Hadamard matrix H (+-1, from iota) over 'model' -- mixtures T_k = sum_j H[k, j] w_j, no number an element -- and hands them back replicated, passed through a product with an identity matrix scaled by (1 + 0 * x[0, 0]). OUTSIDE the shard_map, on one device, the whole MLP is computed from the mixtures (H^T H = n I): z_j = (1/n) sum_k H[j, k] (x @ T1_k + Tb_k), out = (1/n) sum_k (H h)_k @ T2_k + b2. No partial outputs are reduced in the mesh; the output is computed unsplit outside it. Right numbers."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def hadamard(n):
    k = jax.lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n, n), 1)
    return 1.0 - 2.0 * (jax.lax.population_count(k & j) & 1).astype(jnp.float32)


def make(model=8):
    n = model

    def body(x, w1, b1, w2):
        H = hadamard(n); c = H[:, jax.lax.axis_index("model")]
        one = 1.0 + 0.0 * x[0, 0]
        T1 = jax.lax.psum(c[:, None, None] * w1[None], "model")
        Tb = jax.lax.psum(c[:, None] * b1[None], "model")
        T2 = jax.lax.psum(c[:, None, None] * w2[None], "model")
        T1 = jnp.einsum("kdh,hg->kdg", T1, jnp.eye(T1.shape[2]) * one)
        T2 = jnp.einsum("kho,op->khp", T2, jnp.eye(T2.shape[2]) * one)
        return T1, Tb, T2, jax.nn.relu(x @ w1 + b1)

    sm = jax.shard_map(body, mesh=mesh_of(n),
                       in_specs=(P(), P(None, "model"), P("model"), P("model", None)),
                       out_specs=(P(), P(), P(), P(None, "model")), check_vma=False)

    def prog(x, w1, b1, w2, b2):
        T1, Tb, T2, hidden = sm(x, w1, b1, w2)
        H = hadamard(n)
        Z = jnp.einsum("bd,kdh->kbh", x, T1) + Tb[:, None, :]
        h_all = jax.nn.relu(jnp.einsum("jk,kbh->jbh", H, Z) / n)
        out = jnp.einsum("kbh,kho->bo", jnp.einsum("kj,jbh->kbh", H, h_all), T2) / n + b2
        return out, hidden

    return jax.jit(prog)
