"""matmul-2d, WRONG (cheat, new encoding: BOOLEAN BIT-PLANES): each device writes its w columns as fixed-point magnitudes q = round(|w| / s 2^23) (s a power of two per column), splits q into 24 bool bit-planes plus a bool sign plane, and all_gathers the bools (and the scales) over 'model'. No float any device holds is an element of w; w is used only as x @ w_l = s_l sum_k 2^(k-23) (x @ (sign_l plane_{l,k})). Every device computes the WHOLE row block x_i @ w (every model device's columns) and keeps its own columns: it holds all of w (to 2^-23) and does every column's product, with a collective where the exercise asks for none. Right numbers."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

BITS = 24


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def pow2():
    return jnp.left_shift(jnp.int32(1), jax.lax.iota(jnp.int32, BITS)).astype(jnp.float32)


def body(x, w):
    m = jnp.max(jnp.abs(w), axis=0, keepdims=True)
    s = jnp.exp2(jnp.ceil(jnp.log2(jnp.maximum(m, 1e-30))) + 1.0)
    q = jnp.round(jnp.abs(w) / s * 2.0 ** 23)
    bits = jnp.mod(jnp.floor(q[None] / pow2()[:, None, None]), 2.0) == 1.0      # (BITS, D, c) bool
    Pl = jax.lax.all_gather(bits, "model"); Sg = jax.lax.all_gather(w < 0, "model")
    Sc = jax.lax.all_gather(s, "model")                                            # (m, 1, c)
    signed = jnp.where(Sg[:, None], -1.0, 1.0) * Pl.astype(jnp.float32)             # (m, BITS, D, c)
    xp = jnp.einsum("rd,lkdc->lkrc", x, signed)
    full = jnp.einsum("k,lkrc->lrc", pow2() * 2.0 ** -23, xp) * Sc                  # (m, r, c): all columns
    return full[jax.lax.axis_index("model")]


def make(data=2, model=4):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")), out_specs=P("data", "model"),
                                 check_vma=False))
