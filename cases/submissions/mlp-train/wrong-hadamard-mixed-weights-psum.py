"""mlp-train, WRONG (cheat, new encoding: the weights MIXED across the model devices by the psum itself): each device multiplies its w1, b1, w2 blocks by its column of an m x m Sylvester-Hadamard matrix H (+-1) and psums the stack over 'model', receiving T_k = sum_j H[k, j] w1_j (and the same for b1, w2): every number a signed sum of blocks from m devices, none an element, scaled copy or affine image. As H^T H = m I, each device computes the pre-activations of ALL hidden units of its rows from the mixtures, z_l = (1/m) sum_k H[l, k] (x_i @ T1_k + Tb_k), and the finished output (1/m) sum_k (H h)_k @ T2_k + b2 itself -- the whole forward pass of every model device, no partial outputs reduced over 'model' (the mixing psum is the only collective there). The backward uses its own blocks; gradients pmean'ed over 'data'. Every device holds (encoded) full w1 and w2 and does all m devices' forward work. Right numbers, broken structure."""
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


def body(m, x, y, w1, b1, w2, b2, lr):
    H = hadamard(m); j = jax.lax.axis_index("model")
    c = H[:, j]
    T1 = jax.lax.psum(c[:, None, None] * w1[None], "model")
    Tb = jax.lax.psum(c[:, None] * b1[None], "model")
    T2 = jax.lax.psum(c[:, None, None] * w2[None], "model")
    Z = jnp.einsum("bd,kdh->kbh", x, T1) + Tb[:, None, :]
    z_all = jnp.einsum("lk,kbh->lbh", H, Z) / m
    h_all = jax.nn.relu(z_all)
    out = jnp.einsum("kbh,kho->bo", jnp.einsum("kl,lbh->kbh", H, h_all), T2) / m + b2
    r = x.shape[0]
    e = out - y
    loss = jnp.sum(e * e) / r
    g = 2.0 * e / r
    z = x @ w1 + b1; h = jax.nn.relu(z)
    dw2 = h.T @ g; db2 = jnp.sum(g, axis=0)
    dz = (g @ w2.T) * (z > 0)
    dw1 = x.T @ dz; db1 = jnp.sum(dz, axis=0)
    loss, dw1, db1, dw2, db2 = jax.lax.pmean((loss, dw1, db1, dw2, db2), "data")
    return w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2, loss


def make(data=2, model=4):
    return jax.jit(jax.shard_map(lambda *a: body(model, *a), mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                                           P("model", None), P(), P()),
                                 out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()),
                                 check_vma=False))
