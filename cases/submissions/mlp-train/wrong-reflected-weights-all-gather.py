"""mlp-train, WRONG (cheat, new encoding: a local REFLECTION then a plain all_gather of the weights): each device stacks its w1 block and its w2 block transposed, M_j = [w1_j; w2_j^T] ((D+O) x H/m), multiplies it by a Householder reflection R = I - 2 v v^T / |v|^2 (v from iota; R = R^T = R^-1) -- every number a weighted sum of a column's D+O elements, no element, scaled copy or affine image -- and all_gathers it (and b1) over 'model'. Every device then runs the forward of ALL hidden units of its rows itself: z_l = ([x, 0] R) @ G_l + b1_l, out = ((sum_l h_l G_l^T) R)[:, D:] + b2, never decoding a weight and never reducing partial outputs; the backward uses its own blocks, gradients pmean'ed over 'data'. Every device holds (encoded) full w1 and w2 and does all m devices' forward work. Right numbers."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def reflection(k):
    v = jax.lax.iota(jnp.float32, k) + 1.5
    return jnp.eye(k, dtype=jnp.float32) - 2.0 * jnp.outer(v, v) / jnp.dot(v, v)


def body(x, y, w1, b1, w2, b2, lr):
    D, O = w1.shape[0], w2.shape[1]
    R = reflection(D + O)
    G = jax.lax.all_gather(R @ jnp.concatenate([w1, w2.T], axis=0), "model")    # (m, D+O, Hb)
    B1 = jax.lax.all_gather(b1, "model")
    A = jnp.concatenate([x, jnp.zeros((x.shape[0], O), x.dtype)], axis=1) @ R
    h_all = jax.nn.relu(jnp.einsum("be,leh->lbh", A, G) + B1[:, None, :])
    out = (jnp.einsum("lbh,leh->be", h_all, G) @ R)[:, D:] + b2
    r = x.shape[0]
    e = out - y
    g = 2.0 * e / r
    z = x @ w1 + b1; h = jax.nn.relu(z)
    dz = (g @ w2.T) * (z > 0)
    vals = (jnp.sum(e * e) / r, x.T @ dz, jnp.sum(dz, axis=0), h.T @ g, jnp.sum(g, axis=0))
    loss, dw1, db1, dw2, db2 = jax.lax.pmean(vals, "data")
    return w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2, loss


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                                           P("model", None), P(), P()),
                                 out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()),
                                 check_vma=False))
