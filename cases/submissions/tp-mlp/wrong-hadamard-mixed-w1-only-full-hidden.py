"""tp-mlp, WRONG (every device holds all of w1 and b1, mixed, and computes every hidden unit): each device
multiplies its w1, b1 blocks by its column of an n x n Sylvester-Hadamard matrix H and psums the stacks
over 'model' -- every device receives T_k = sum_j H[k, j] w1_j, all of w1 encoded -- then computes the
pre-activations of ALL H hidden units, z_j = (1/n) sum_k H[j, k] (x @ T_k + Tb_k) (the whole first layer
on every device, n times the work), and returns its own hidden block from them. w2 is never mixed or
gathered: out is the honest psum of h_own @ w2_own, b2 once. Unlike the gallery's
wrong-hadamard-mixed-weights-psum only w1/b1 travel, so a device receives (D+1) H numbers -- under the
receives_little bound, which is pooled over w1 AND w2 (all other devices' elements of both)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def hadamard(n):
    k = jax.lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n, n), 1)
    return 1.0 - 2.0 * (jax.lax.population_count(k & j) & 1).astype(jnp.float32)


def body(n, x, w1, b1, w2, b2):
    H = hadamard(n)
    me = jax.lax.axis_index("model")
    c = H[:, me]
    T1 = jax.lax.psum(c[:, None, None] * w1[None], "model")      # (n, D, H/n): all of w1, mixed
    Tb = jax.lax.psum(c[:, None] * b1[None], "model")            # (n, H/n): all of b1, mixed
    Z = jnp.einsum("bd,kdh->kbh", x, T1) + Tb[:, None, :]         # mixed pre-activations
    h_all = jax.nn.relu(jnp.einsum("jk,kbh->jbh", H, Z) / n)     # (n, B, H/n): EVERY hidden unit
    h = jax.lax.dynamic_index_in_dim(h_all, me, 0, keepdims=False)
    out = jax.lax.psum(h @ w2, "model") + b2
    return out, h


def make(model=8):
    return jax.jit(jax.shard_map(lambda *a: body(model, *a), mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
