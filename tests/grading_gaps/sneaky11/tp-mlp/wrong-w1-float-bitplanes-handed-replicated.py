"""tp-mlp, WRONG (every device is handed all of w1 and b1, as float bit-planes): OUTSIDE the shard_map w1
and b1 are taken apart elementwise into 24 float32 0/1 mantissa bit-planes and a per-element signed
power-of-two scale (w = scale * sum_k 2^k plane_k) and handed REPLICATED (P()) to the body, besides the
honest split blocks. No number handed or computed is an element, a scaled copy, or a function of one
element that changes whenever it does (a bit changes in about half of its element's redraws). Each
device computes the pre-activations of ALL hidden units as sum_k x @ (scale 2^k plane_k) + b1 (the whole
first layer, n times the work) and returns its own block of them; out is the honest psum of h @ w2."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def planes_of(a):
    u = jax.lax.bitcast_convert_type(a, jnp.uint32)
    sign = 1.0 - 2.0 * (u >> 31).astype(jnp.float32)
    ex = ((u >> 23) & 255).astype(jnp.int32)
    scale = sign * jnp.exp2((ex - 150).astype(jnp.float32))
    mant = (u & 0x7FFFFF) | jnp.where(ex > 0, 0x800000, 0).astype(jnp.uint32)
    planes = jnp.stack([((mant >> k) & 1).astype(jnp.float32) for k in range(24)])
    return planes, scale


def body(n, x, w1, b1, w2, b2, p1, s1):
    xa = jnp.concatenate([x, jnp.ones((x.shape[0], 1), x.dtype)], axis=1)    # [x, 1]: b1 folded in
    z = jnp.zeros((x.shape[0], p1.shape[2]), x.dtype)
    for k in range(24):
        z = z + xa @ (s1 * (2.0 ** k) * p1[k])         # products only: never w1 or b1 itself
    h_all = jax.nn.relu(z)                              # EVERY hidden unit
    me = jax.lax.axis_index("model")
    hb = w1.shape[1]
    h = jax.lax.dynamic_slice_in_dim(h_all, me * hb, hb, axis=1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    sm = jax.shard_map(lambda *a: body(model, *a), mesh=mesh_of(model),
                       in_specs=(P(), P(None, "model"), P("model"), P("model", None), P(), P(), P()),
                       out_specs=(P(), P(None, "model")), check_vma=False)

    def prog(x, w1, b1, w2, b2):
        p1, s1 = planes_of(jnp.concatenate([w1, b1[None, :]], axis=0))   # planes of [w1; b1]
        return sm(x, w1, b1, w2, b2, p1, s1)

    return jax.jit(prog)
