"""mlp-train, WRONG (cheat, new encoding: the batch MIXED across the data devices by the psum itself): each device multiplies its x and y rows by its column of a d x d Sylvester-Hadamard matrix H (+-1, from iota) and psums the stack over 'data', receiving X_k = sum_i H[k, i] x_i, Y_k (no number an element). Since H^T H = d I, it computes the FULL batch's pre-activations of its hidden block, z = (1/d) H^T (X_k @ w1_j) + b1_j, the partial outputs of all B rows (psum'ed over 'model' as asked), the full-batch residual e = (1/d) H^T ((H out)_k - Y_k) (never y itself), and the full-batch gradients of its blocks (dW1 from the mixtures, (1/d) sum_k X_k^T (H dz)_k). Every data device does the whole batch's work; the 'mean over data' is a pmean of identical replicas. Right numbers, no data parallelism."""
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
    d = data

    def body(x, y, w1, b1, w2, b2, lr):
        H = hadamard(d); c = H[:, jax.lax.axis_index("data")]
        X = jax.lax.psum(c[:, None, None] * x[None], "data")          # (d, r, D)
        Y = jax.lax.psum(c[:, None, None] * y[None], "data")          # (d, r, O)
        r = x.shape[0]; B = d * r
        z = jnp.einsum("ik,krh->irh", H, jnp.einsum("krd,dh->krh", X, w1)) / d + b1   # (d, r, Hb): all rows
        h = jax.nn.relu(z)
        out = jax.lax.psum(jnp.einsum("irh,ho->iro", h, w2), "model") + b2           # (d, r, O)
        E = jnp.einsum("ki,iro->kro", H, out) - Y
        e = jnp.einsum("ik,kro->iro", H, E) / d                                      # out - y, all rows
        loss = jnp.sum(e * e) / B
        g = 2.0 * e / B
        dw2 = jnp.einsum("irh,iro->ho", h, g); db2 = jnp.sum(g, axis=(0, 1))
        dz = jnp.einsum("iro,ho->irh", g, w2) * (z > 0)
        dw1 = jnp.einsum("krd,krh->dh", X, jnp.einsum("ki,irh->krh", H, dz)) / d
        db1 = jnp.sum(dz, axis=(0, 1))
        loss, dw1, db1, dw2, db2 = jax.lax.pmean((loss, dw1, db1, dw2, db2), "data")
        return w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2, loss

    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                                           P("model", None), P(), P()),
                                 out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()),
                                 check_vma=False))
