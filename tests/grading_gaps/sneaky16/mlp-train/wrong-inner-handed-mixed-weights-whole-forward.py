"""mlp-train, WRONG (every device does the WHOLE forward pass of every model device, from a mixed
copy of all of w1, b1, w2; no tensor-parallel psum): outer shard_map manual over 'data' (x, y rows;
weights handed P()). The outer body mixes each weight's two halves of hidden units,
u = first half + second half, v = first half - second half (slices and add/subtract: no product
or reduction), and hands them WHOLE (P()) to the inner shard_map manual over 'model', with the
device's own blocks. Every inner device computes x_blk @ w1 + b1 for ALL hidden units from the
mixes ((x u + x v)/2, (x u - x v)/2), the relu, and the whole output h @ w2 + b2 (again from the
mixes of w2) -- no partial outputs psum'd over 'model'. Its gradients come through its own block's
partial output (out = stop_gradient(out_all - partial) + partial: exact gradients). The outer body
pmeans them over 'data' and steps. A decoy psum over 'model' of 0 * b1's block. No number a device
holds is an element or scaled copy of a weight (each is a sum or difference of two)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)

    def inner(x, y, w1, b1, w2, b2, u1, v1, ub, vb, u2, v2):
        # every hidden unit, from the mixes
        z_u, z_v = x @ u1 + ub, x @ v1 + vb
        h_l = jax.nn.relu((z_u + z_v) * 0.5)
        h_r = jax.nn.relu((z_u - z_v) * 0.5)
        out_all = ((h_l + h_r) @ u2 + (h_l - h_r) @ v2) * 0.5
        out_all = jax.lax.stop_gradient(out_all)
        zero = jax.lax.psum(jnp.sum(b1) * 0.0, "model")  # decoy collective over 'model'
        params = (w1, b1, w2, jax.lax.pcast(b2, "model", to="varying"))  # b2: no implicit psum
        if data > 1:
            params = jax.lax.pcast(params, "data", to="varying")

        def loss_fn(w1, b1, w2, b2):
            partial = jax.nn.relu(x @ w1 + b1) @ w2
            others = jax.lax.stop_gradient(out_all - partial)
            out = others + partial + b2
            return jnp.mean(jnp.sum((out - y) ** 2, axis=1)) + zero

        loss, grads = jax.value_and_grad(loss_fn, argnums=(0, 1, 2, 3))(*params)
        # the loss is the same on every model device (computed whole on each); b2's gradient too
        loss = jax.lax.pmean(loss, "model")
        gb2 = jax.lax.pmean(grads[3], "model")
        return loss, (grads[0], grads[1], grads[2], gb2)

    inner_map = jax.shard_map(
        inner, axis_names={"model"},
        in_specs=(P(), P(), P(None, "model"), P("model"), P("model", None), P()) + (P(),) * 6,
        out_specs=(P(), (P(None, "model"), P("model"), P("model", None), P())))

    def outer(x, y, w1, b1, w2, b2, lr):
        H = w1.shape[1]
        k = H // 2
        u1, v1 = w1[:, :k] + w1[:, k:], w1[:, :k] - w1[:, k:]
        ub, vb = b1[:k] + b1[k:], b1[:k] - b1[k:]
        u2, v2 = w2[:k] + w2[k:], w2[:k] - w2[k:]
        loss, grads = inner_map(x, y, w1, b1, w2, b2, u1, v1, ub, vb, u2, v2)
        if data > 1:
            loss, grads = jax.lax.pmean((loss, grads), "data")
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    return jax.jit(jax.shard_map(
        outer, mesh=mesh, axis_names={"data"},
        in_specs=(P("data"), P("data"), P(), P(), P(), P(), P()),
        out_specs=(P(), P(), P(), P(), P()), check_vma=data > 1))
