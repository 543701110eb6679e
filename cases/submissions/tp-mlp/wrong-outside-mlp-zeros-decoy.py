"""tp-mlp, WRONG (cheat, the work outside the mesh; variant of wrong-outside-mlp-from-laundered-blocks with a different decoy): the body hands back its own w1, b1, w2 blocks multiplied by identity matrices scaled by (1 + 0 * x[0, 0]), stacked over 'model', plus a psum over 'model' of 0 * its legitimate partial output; OUTSIDE the shard_map the full w1, b1, w2 are reassembled and the whole MLP (hidden and out) is computed on one device; the psum of zeros is added to out."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2):
    one = 1.0 + 0.0 * x[0, 0]
    ec = jnp.eye(w1.shape[1], dtype=jnp.float32) * one
    z = jax.lax.psum(0.0 * (jax.nn.relu(x @ w1 + b1) @ w2), "model")
    return (w1 @ ec)[None], (b1 @ ec)[None], (ec @ w2)[None], z


def make(model=8):
    sm = jax.shard_map(body, mesh=mesh_of(model),
                       in_specs=(P(), P(None, "model"), P("model"), P("model", None)),
                       out_specs=(P("model"), P("model"), P("model"), P()), check_vma=False)

    def f(x, w1, b1, w2, b2):
        s1, sb, s2, z = sm(x, w1, b1, w2)
        W1 = jnp.transpose(s1, (1, 0, 2)).reshape(w1.shape)
        B1 = sb.reshape(b1.shape); W2 = s2.reshape(w2.shape)
        h = jax.nn.relu(x @ W1 + B1)
        return h @ W2 + b2 + z, h
    return jax.jit(f)
