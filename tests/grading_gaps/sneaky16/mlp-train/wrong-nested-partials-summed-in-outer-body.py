"""mlp-train, WRONG (the tensor-parallel psum is not done by the mesh program: the partial outputs
are summed in the outer body, on the automatic 'model' axis): outer shard_map manual over 'data'
(x, y rows; weights handed P()). A first inner shard_map manual over 'model' returns each
device's partial output h_blk @ w2_blk stacked, split P('model') -- (m, B/d, O) in the outer body
-- and the outer body adds them up (jnp.sum over the stack: the combining over 'model' left to the
compiler, as the gallery's partial outputs summed outside the shard_map after a decoy psum). A
decoy psum over 'model' of 0 * b1's block makes the "collective over 'model'". A second inner map
returns the blocks' gradients (backprop by hand from dout); the outer body pmeans over 'data' and
steps."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    mesh = mesh_of(data, model)
    WSPECS = (P(None, "model"), P("model"), P("model", None))

    def partial_body(x, w1, b1, w2):
        zero = jax.lax.psum(jnp.sum(b1) * 0.0, "model")  # decoy collective over 'model'
        return (jax.nn.relu(x @ w1 + b1) @ w2 + zero)[None]

    partials = jax.shard_map(partial_body, axis_names={"model"},
                             in_specs=(P(),) + WSPECS, out_specs=P("model"))

    def backward_body(x, dout, w1, b1, w2):
        z = x @ w1 + b1
        h = jax.nn.relu(z)
        dz = (dout @ w2.T) * (z > 0)
        return x.T @ dz, jnp.sum(dz, axis=0), h.T @ dout

    backward = jax.shard_map(backward_body, axis_names={"model"},
                             in_specs=(P(), P()) + WSPECS, out_specs=WSPECS)

    def outer(x, y, w1, b1, w2, b2, lr):
        out = jnp.sum(partials(x, w1, b1, w2), axis=0) + b2
        r = out - y
        n = x.shape[0]
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
