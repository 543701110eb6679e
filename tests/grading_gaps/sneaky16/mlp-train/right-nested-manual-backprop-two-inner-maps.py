"""mlp-train, RIGHT (nested; forward and backward in two inner maps, backprop by hand): outer
shard_map manual over 'data' (x, y rows; weights handed P()). A first inner shard_map manual over
'model' computes the output (h_blk @ w2_blk psum'd over 'model', + b2) and returns it P(); the
outer body forms the loss over its rows and dout = 2 (out - y) / (its rows) (the mean over 'data'
taken after); a second inner map manual over 'model' takes dout
and its blocks and returns the blocks' gradients (x_blk^T dz, dz's column sums, h^T dout) split
like the weights; the outer body pmeans loss and gradients over 'data' and steps."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    WSPECS = (P(None, "model"), P("model"), P("model", None))

    forward = jax.shard_map(
        lambda x, w1, b1, w2: jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2, "model"),
        axis_names={"model"}, in_specs=(P(),) + WSPECS, out_specs=P())

    def backward_body(x, dout, w1, b1, w2):
        z = x @ w1 + b1
        h = jax.nn.relu(z)
        gw2 = h.T @ dout
        dz = (dout @ w2.T) * (z > 0)
        return x.T @ dz, jnp.sum(dz, axis=0), gw2

    backward = jax.shard_map(backward_body, axis_names={"model"},
                             in_specs=(P(), P()) + WSPECS, out_specs=WSPECS)

    def outer(x, y, w1, b1, w2, b2, lr):
        out = forward(x, w1, b1, w2) + b2
        r = out - y
        n = x.shape[0]  # this device's rows: the mean over them, then over 'data'
        loss = jnp.sum(r ** 2) / n
        dout = 2.0 * r / n
        gw1, gb1, gw2 = backward(x, dout, w1, b1, w2)
        grads = (gw1, gb1, gw2, jnp.sum(dout, axis=0))
        if data > 1:
            loss, grads = jax.lax.pmean((loss, grads), "data")
        return (*(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)), loss)

    return jax.jit(jax.shard_map(
        outer, mesh=mesh, axis_names={"data"},
        in_specs=(P("data"), P("data"), P(), P(), P(), P(), P()),
        out_specs=(P(), P(), P(), P(), P()), check_vma=data > 1))
