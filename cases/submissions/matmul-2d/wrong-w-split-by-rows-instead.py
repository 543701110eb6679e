"""matmul-2d wrong-w-split-by-rows-instead, a wrong program (not the exercise's split, and with a collective): w is
zero-padded to D' rows (a multiple of m), its rows rotated by one and dealt round-robin, outside and handed split by ROWS over 'model' (x padded and split by columns
over 'model' too), so each device multiplies its x columns by its w rows for ALL of out's columns; the partial
products are psum'd over 'model' (every device then holds its whole row block of out) and each keeps its own
columns. The exercise asks w split by columns and no collective."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def make(data, model):
    mesh = Mesh(np.array(jax.devices()[:data * model]).reshape(data, model), ("data", "model"))

    def body(xc, wr):
        row = lax.psum(xc @ wr, "model")                     # (B/d, H): the whole row block of out
        hb = wr.shape[1] // model
        return lax.dynamic_slice_in_dim(row, lax.axis_index("model") * hb, hb, axis=1)

    sm = jax.shard_map(body, mesh=mesh, in_specs=(P("data", "model"), P("model", None)),
                       out_specs=P("data", "model"), check_vma=False)

    def f(x, w):
        D = x.shape[1]
        Dq = -(-D // model) * model + model   # one extra zero row per device: never the inputs' shapes
        x = jnp.roll(x, 1, axis=1)          # the same rotation of x's columns and w's rows: x w unchanged,
        w = jnp.roll(w, 1, axis=0)          # and the handed arrays are never the inputs as they are
        # rows dealt round-robin: device j gets rows j, j + m, ... (a derived array, never w itself)
        wp = jnp.pad(w, ((0, Dq - D), (0, 0))).reshape(Dq // model, model, -1).transpose(1, 0, 2).reshape(Dq, -1)
        xp = jnp.pad(x, ((0, 0), (0, Dq - D))).reshape(x.shape[0], Dq // model, model).transpose(0, 2, 1).reshape(x.shape[0], Dq)
        return sm(xp, wp)

    return jax.jit(f)
