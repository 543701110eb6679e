"""mlp-train wrong-roll-outside-neighbour-units, a cheat: on meshes with more than 2 'model' devices, w1, b1, w2 are
rolled by one block of hidden units OUTSIDE the shard_map and handed in as extra operands, so each device holds its own
and its neighbour's hidden units and computes both partial outputs (each unit's forward done on two devices); out is
the psum of their average. (On model <= 2 it is the plain split, since there the neighbour's block would be all of
w1.) The backward is its own block's."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def make(data, model):
    mesh = Mesh(np.array(jax.devices()[:data * model]).reshape(data, model), ("data", "model"))
    roll = model > 2

    def body(x, y, w1, b1, w2, w1r, b1r, w2r, b2, lr):
        z = x @ w1 + b1
        h = jnp.maximum(z, 0.0)
        hr = jnp.maximum(x @ w1r + b1r, 0.0)
        part = (h @ w2 + hr @ w2r) * 0.5 if roll else h @ w2
        out = lax.psum(part, "model") + b2
        B = x.shape[0] * data
        e = out - y
        loss = lax.psum(jnp.sum(e * e), "data") / B
        dout = 2.0 * e / B
        gw2 = h.T @ dout
        gb2 = jnp.sum(dout, axis=0)
        dz = (dout @ w2.T) * (z > 0)
        gw1 = x.T @ dz
        gb1 = jnp.sum(dz, axis=0)
        gw1, gb1, gw2, gb2 = lax.psum((gw1, gb1, gw2, gb2), "data")
        return w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2, loss

    sm = jax.shard_map(body, mesh=mesh,
                       in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None),
                                 P(None, "model"), P("model"), P("model", None), P(), P()),
                       out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()), check_vma=False)

    def f(x, y, w1, b1, w2, b2, lr):
        if not roll:
            return sm(x, y, w1, b1, w2, w1, b1, w2, b2, lr)
        k = w1.shape[1] // model
        w1r = jnp.concatenate([w1[:, k:], w1[:, :k]], axis=1)
        b1r = jnp.concatenate([b1[k:], b1[:k]])
        w2r = jnp.concatenate([w2[k:], w2[:k]], axis=0)
        return sm(x, y, w1, b1, w2, w1r, b1r, w2r, b2, lr)

    return jax.jit(f)
