"""tp-mlp, RIGHT (unusual loop): each device walks its own hidden units with lax.fori_loop, one unit per step: it takes column u of its w1 block and entry u of b1 (dynamic_slice), computes that unit's activation relu(x w1[:, u] + b1[u]), writes it into its hidden block (dynamic_update_slice) and adds its rank-one contribution h_u (outer) w2[u, :] to its partial output. Then the partials are psum'ed over 'model' and b2 added once. Own blocks only."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    B, Hb, O = x.shape[0], w1.shape[1], w2.shape[1]

    def step(u, carry):
        hid, part = carry
        col = jax.lax.dynamic_slice_in_dim(w1, u, 1, axis=1)          # (D, 1)
        bu = jax.lax.dynamic_slice_in_dim(b1, u, 1)                    # (1,)
        hu = jax.nn.relu(x @ col + bu)                                 # (B, 1)
        row = jax.lax.dynamic_slice_in_dim(w2, u, 1, axis=0)          # (1, O)
        return jax.lax.dynamic_update_slice_in_dim(hid, hu, u, axis=1), part + hu * row

    hid, part = jax.lax.fori_loop(0, Hb, step, (jnp.zeros((B, Hb), x.dtype), jnp.zeros((B, O), x.dtype)))
    return jax.lax.psum(part, "model") + b2, hid


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
