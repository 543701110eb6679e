"""tp-mlp, WRONG (cheat, new encoding: a local orthogonal REFLECTION of each block, then a plain all_gather): each device stacks its w1 block and its w2 block transposed into M_j = [w1_j; w2_j^T] ((D+O) x H/n) and multiplies it by a Householder reflection R = I - 2 v v^T / |v|^2 (v = 1.5, 2.5, ..., built from iota; R = R^T = R^-1), so every number of R M_j is a weighted sum of D+O elements of one column -- no element, scaled copy or affine image -- and all_gathers that over 'model'. Every device then holds (encoded) all of w1 and w2 and computes the WHOLE MLP: z_l = ([x, 0] R) @ G_l + b1_l for every unit group l, and out = ((sum_l h_l G_l^T) R)[:, D:] + b2 (G_l^T R = M_l^T), never decoding a weight; no partial outputs are reduced. Own hidden block returned. Right numbers, every device does all n devices' work."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def reflection(k):
    v = jax.lax.iota(jnp.float32, k) + 1.5
    return jnp.eye(k, dtype=jnp.float32) - 2.0 * jnp.outer(v, v) / jnp.dot(v, v)


def body(x, w1, b1, w2, b2):
    D, O = w1.shape[0], w2.shape[1]
    R = reflection(D + O)
    M = jnp.concatenate([w1, w2.T], axis=0)                       # (D+O, H/n), my block
    G = jax.lax.all_gather(R @ M, "model")                        # (n, D+O, H/n) reflected
    B1 = jax.lax.all_gather(b1, "model")                          # (n, H/n)
    A = jnp.concatenate([x, jnp.zeros((x.shape[0], O), x.dtype)], axis=1) @ R
    h_all = jax.nn.relu(jnp.einsum("be,leh->lbh", A, G) + B1[:, None, :])
    S = jnp.einsum("lbh,leh->be", h_all, G)
    out = (S @ R)[:, D:] + b2
    return out, jax.nn.relu(x @ w1 + b1)


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
