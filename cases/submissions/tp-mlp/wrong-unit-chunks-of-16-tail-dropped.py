"""tp-mlp, WRONG (right only on the cases' shapes): each device walks its hidden block in chunks of
(up to) 16 units -- `size = min(hb, 16); nch = hb // size` -- and forgets the tail chunk. Every case has
H/n in {1, 2, 4, 8, 16}, so nothing is dropped there; with H/n = 24 (H = 192) the last 8 units of every
block are missing from hidden and from out. The block size is read with int(), so the exporter falls
back to one concrete export per case shape: the grader never sees another shape."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    hb = int(w1.shape[1])
    size = min(hb, 16)
    nch = hb // size
    parts, acc = [], jnp.zeros((x.shape[0], w2.shape[1]), x.dtype)
    for c in range(nch):
        sl = slice(c * size, (c + 1) * size)
        h_c = jax.nn.relu(x @ w1[:, sl] + b1[sl])
        parts.append(h_c)
        acc = acc + h_c @ w2[sl]
    h = jnp.concatenate(parts, axis=1)
    h = jnp.pad(h, ((0, 0), (0, hb - h.shape[1])))
    return jax.lax.psum(acc, "model") + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model"))))
