"""tp-mlp wrong-w1-split-by-rows-instead, a wrong program (not the exercise's split): w1 is zero-padded to D' rows (a
multiple of n) outside and handed split by ROWS over 'model' (x padded and split by columns to match), not by hidden
units: each device multiplies its x columns by its w1 rows for ALL hidden units, the pre-activations of every unit are
psum'd over 'model' (so every device holds the whole hidden layer's z), and each device keeps its hidden block from it;
the second layer is the usual psum of h_blk w2_blk. The exercise asks w1 split by hidden units and hidden never whole
on a device."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def make(model):
    mesh = Mesh(np.array(jax.devices()[:model]), ("model",))

    def body(xc, w1r, b1, w2, b2):
        z = lax.psum(xc @ w1r, "model")                        # (B, H): every unit's pre-activation
        hb = b1.shape[0]
        me = lax.axis_index("model")
        h = jnp.maximum(lax.dynamic_slice_in_dim(z, me * hb, hb, axis=1) + b1, 0.0)
        return lax.psum(h @ w2, "model") + b2, h

    sm = jax.shard_map(body, mesh=mesh,
                       in_specs=(P(None, "model"), P("model", None), P("model"), P("model", None), P()),
                       out_specs=(P(), P(None, "model")), check_vma=False)

    def f(x, w1, b1, w2, b2):
        D = x.shape[1]
        Dp = -(-D // model) * model
        xc = jnp.pad(x, ((0, 0), (0, Dp - D)))
        w1r = jnp.pad(w1, ((0, Dp - D), (0, 0)))
        return sm(xc, w1r, b1, w2, b2)

    return jax.jit(f)
