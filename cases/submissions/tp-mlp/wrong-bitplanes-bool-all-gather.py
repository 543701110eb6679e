"""tp-mlp, WRONG (cheat, new encoding: BOOLEAN BIT-PLANES): each device writes its w1 block (per column) and w2 block (per row) as fixed-point magnitudes q = round(|w| / s 2^23) with a power-of-two scale s, splits q into 24 bool bit-planes plus a bool sign plane, and all_gathers the bool planes (and the power-of-two scales) over 'model'. No float value any device holds is an element of w1 or w2: the gathered arrays are bools, and the weights are used only through products with the planes, x @ w_l = s_l * sum_k 2^(k-23) (x @ (sign_l * plane_{l,k})). Every device so holds all of w1 and w2 (to 2^-23 relative) and computes the WHOLE MLP -- every hidden unit, the whole output -- by itself; no partial outputs are reduced. Own hidden block returned. Right numbers (within 1e-6)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

BITS = 24


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def planes(w, axis):
    """bool planes (BITS, *w.shape), bool sign, power-of-two scale along `axis` (kept dims)."""
    m = jnp.max(jnp.abs(w), axis=axis, keepdims=True)
    s = jnp.exp2(jnp.ceil(jnp.log2(jnp.maximum(m, 1e-30))) + 1.0)
    q = jnp.round(jnp.abs(w) / s * 2.0 ** 23)
    ks = pow2().reshape((BITS,) + (1,) * w.ndim)
    bits = jnp.mod(jnp.floor(q[None] / ks), 2.0) == 1.0
    return bits, w < 0, s


def pow2():
    """2^0 .. 2^(BITS-1), exact (integer shifts, not exp2)."""
    return jnp.left_shift(jnp.int32(1), jax.lax.iota(jnp.int32, BITS)).astype(jnp.float32)


def signed(bits, sign):
    return jnp.where(sign[:, None], -1.0, 1.0) * bits.astype(jnp.float32)


def body(x, w1, b1, w2, b2):
    p1, g1, s1 = planes(w1, 0)              # s1 (1, H/n): per column
    p2, g2, s2 = planes(w2, 1)              # s2 (H/n, 1): per row
    P1 = jax.lax.all_gather(p1, "model"); G1 = jax.lax.all_gather(g1, "model"); S1 = jax.lax.all_gather(s1, "model")
    P2 = jax.lax.all_gather(p2, "model"); G2 = jax.lax.all_gather(g2, "model"); S2 = jax.lax.all_gather(s2, "model")
    B1 = jax.lax.all_gather(b1, "model")
    wk = pow2() * (2.0 ** -23)
    # x @ w1_l for every l, from the planes
    xp = jnp.einsum("bd,lkdh->lkbh", x, signed(P1, G1))
    z = jnp.einsum("k,lkbh->lbh", wk, xp) * S1 + B1[:, None, :]
    h = jax.nn.relu(z)                                           # (n, B, H/n): every unit
    hs = h * jnp.swapaxes(S2, 1, 2)                              # fold the per-row scales of w2
    out = jnp.einsum("k,lkbo->bo", wk, jnp.einsum("lbh,lkho->lkbo", hs, signed(P2, G2))) + b2
    return out, jax.nn.relu(x @ w1 + b1)


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
