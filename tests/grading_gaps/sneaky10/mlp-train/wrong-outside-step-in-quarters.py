"""mlp-train, WRONG (the whole forward and backward pass OUTSIDE the mesh, in quarters): on one
device, outside every shard_map, the pre-activations, hidden units, partial outputs and every
gradient piece are computed for each (half of the rows) x (half of the hidden units) quarter
apart -- no product, reduction or arithmetic ever combines a whole x, y, w1, b1 or w2. Two
shard_maps only ADD the pieces: the first adds the two hidden halves' partial outputs of each row
(+ b2; handed zero-padded, split by rows), the second psums the zero-padded gradient pieces laid in
slots over 'data' and applies the update to each device's own parameter blocks. No device ever
multiplies x by w1 or differentiates anything."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    d = data
    mesh = mesh_of(d, model)

    def slot(piece, k):
        z = jnp.zeros((1,) + piece.shape, piece.dtype)
        return jnp.concatenate([z] * k + [piece[None]] + [z] * (d - 1 - k))

    def add_rows(b2, *os):
        acc = os[0]
        for o in os[1:]:
            acc = acc + o
        return acc + b2

    sm_out = jax.shard_map(add_rows, mesh=mesh, in_specs=(P(),) + (P("data", None),) * 4,
                           out_specs=P("data", None), check_vma=False)

    def f(x, y, w1, b1, w2, b2, lr):
        B, D = x.shape
        H, O = w2.shape
        rb, hb = B // 2, H // 2
        R = [slice(0, rb), slice(rb, B)]
        C = [slice(0, hb), slice(hb, H)]
        z, h, opad = {}, {}, []
        for a, ra in enumerate(R):
            for c, hc in enumerate(C):
                z[a, c] = x[ra] @ w1[:, hc] + b1[hc]
                h[a, c] = jax.nn.relu(z[a, c])
                o = h[a, c] @ w2[hc]
                opad.append(jnp.pad(o, ((ra.start, B - ra.stop), (0, 0))))
        out = sm_out(b2, *opad)
        pieces = {k: [] for k in ("w1", "b1", "w2", "b2", "loss")}
        for a, ra in enumerate(R):
            e = out[ra] - y[ra]
            dout = 2.0 * e / B
            k = a % d
            pieces["loss"].append(slot(jnp.sum(jnp.square(e)) / B, k))
            pieces["b2"].append(slot(jnp.sum(dout, axis=0), k))
            for c, hc in enumerate(C):
                dz = (dout @ w2[hc].T) * (z[a, c] > 0)
                gw1 = x[ra].T @ dz
                pieces["w1"].append(slot(jnp.pad(gw1, ((0, 0), (hc.start, H - hc.stop))), k))
                pieces["b1"].append(slot(jnp.pad(jnp.sum(dz, axis=0), (hc.start, H - hc.stop)), k))
                gw2 = h[a, c].T @ dout
                pieces["w2"].append(slot(jnp.pad(gw2, ((hc.start, H - hc.stop), (0, 0))), k))

        def upd(w1b, b1b, w2b, b2, lr, pw1, pb1, pw2, pb2, pl):
            tot = lambda ps: jax.lax.psum(sum(p[0] for p in ps), "data")
            return (w1b - lr * tot(pw1), b1b - lr * tot(pb1), w2b - lr * tot(pw2),
                    b2 - lr * tot(pb2), tot(pl))

        sm_upd = jax.shard_map(
            upd, mesh=mesh,
            in_specs=(P(None, "model"), P("model"), P("model", None), P(), P(),
                      [P("data", None, "model")] * 4, [P("data", "model")] * 4,
                      [P("data", "model", None)] * 4, [P("data")] * 2, [P("data")] * 2),
            out_specs=(P(None, "model"), P("model"), P("model", None), P(), P()), check_vma=False)
        return sm_upd(w1, b1, w2, b2, lr, pieces["w1"], pieces["b1"], pieces["w2"], pieces["b2"],
                      pieces["loss"])
    return jax.jit(f)
