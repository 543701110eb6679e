"""tp-mlp, WRONG (no tensor parallelism at all: the MLP computed outside, in two halves): OUTSIDE
every shard_map, on one device, hidden and the partial out are computed for the first half of the
hidden units and, apart, for the second half (no product, reduction or arithmetic ever combines a
whole w1, b1 or w2). The shard_map is handed the two hidden halves (replicated) and the two partial
outs laid out in two zero-padded stacks of n slots split over 'model'; it psums the slots (adding
the two halves: the only 'distributed' work), adds b2, and returns each device's columns of
hidden cut from the halves. No device ever received a block of w1, b1 or w2."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(model=8):
    n = model

    def body(h1, h2, s1, s2, b2):
        out = jax.lax.psum(s1[0] + s2[0], "model") + b2
        hb = (h1.shape[1] + h2.shape[1]) // n
        hfull = jnp.concatenate([h1, h2], axis=1)
        i = jax.lax.axis_index("model")
        return out, jax.lax.dynamic_slice_in_dim(hfull, i * hb, hb, axis=1)

    sm = jax.shard_map(body, mesh=mesh_of(n),
                       in_specs=(P(), P(), P("model"), P("model"), P()),
                       out_specs=(P(), P(None, "model")), check_vma=False)

    def f(x, w1, b1, w2, b2):
        H = w1.shape[1]
        k = H // 2
        h1 = jax.nn.relu(x @ w1[:, :k] + b1[:k])
        h2 = jax.nn.relu(x @ w1[:, k:] + b1[k:])
        o1, o2 = h1 @ w2[:k], h2 @ w2[k:]
        z = jnp.zeros((n - 1,) + o1.shape, o1.dtype)
        s1 = jnp.concatenate([o1[None], z])
        s2 = jnp.concatenate([z[:1], o2[None], z[1:]])
        return sm(h1, h2, s1, s2, b2)
    return jax.jit(f)
