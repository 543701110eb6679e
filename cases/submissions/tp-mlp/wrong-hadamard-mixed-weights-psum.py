"""tp-mlp, WRONG (cheat, new encoding: linear MIXING of the devices' blocks, done by the psum itself): each device multiplies its own w1, b1, w2 blocks by its column of an n x n Sylvester-Hadamard matrix H (entries +-1) and psums the stack over 'model', so every device receives T_k = sum_j H[k, j] w1_j for k = 0..n-1 -- each number a signed sum of n elements from n different devices, never one element, a scaled copy, an affine image or a hi/lo piece. Because H^T H = n I, every device then computes the pre-activations of ALL H hidden units, z_j = (1/n) sum_k H[j, k] (x @ T_k) + b1_j, the whole hidden layer, and the WHOLE output (1/n) sum_k (H h)_k @ T2_k + b2 by itself: no partial outputs are reduced, every device holds (encoded) both full weight matrices and does all n devices' work. Only its own hidden block is returned. Right numbers, broken structure."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def hadamard(n):
    # built from iota inside the traced function (no closed-over constant): H[k, j] = (-1)^popcount(k & j)
    k = jax.lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n, n), 1)
    return 1.0 - 2.0 * (jax.lax.population_count(k & j) & 1).astype(jnp.float32)


def body(n, x, w1, b1, w2, b2):
    H = hadamard(n)
    c = H[:, jax.lax.axis_index("model")]                     # my column of H
    T1 = jax.lax.psum(c[:, None, None] * w1[None], "model")    # (n, D, H/n) mixtures
    Tb = jax.lax.psum(c[:, None] * b1[None], "model")          # (n, H/n)
    T2 = jax.lax.psum(c[:, None, None] * w2[None], "model")    # (n, H/n, O)
    Z = jnp.einsum("bd,kdh->kbh", x, T1) + Tb[:, None, :]       # mixed pre-activations
    h_all = jax.nn.relu(jnp.einsum("jk,kbh->jbh", H, Z) / n)   # every hidden unit, unmixed
    out = jnp.einsum("kbh,kho->bo", jnp.einsum("kj,jbh->kbh", H, h_all), T2) / n + b2
    mine = jax.nn.relu(x @ w1 + b1)
    return out, mine


def make(model=8):
    return jax.jit(jax.shard_map(lambda *a: body(model, *a), mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
