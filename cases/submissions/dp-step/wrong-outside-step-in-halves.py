"""dp-step, WRONG (the whole step's arithmetic outside the mesh, in two halves): OUTSIDE every
shard_map, on one device, the residual, squared error and gradient sums are computed for the first
half of the rows and, apart, for the second half (no product, reduction or arithmetic ever combines
all of x or y). The two halves' partial sums are laid out in two zero-padded stacks of n slots (the first
half's in slot 0 of one, the second's in slot 1 of the other), handed to a shard_map split over 'data', and psum'd there
-- the only 'data-parallel' work is adding two numbers per parameter. The update is taken inside."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def make(data=8):
    n = data

    def body(w, b, s1, s2, lr, N):
        t = jax.lax.psum(s1[0] + s2[0], "data")
        D, K = w.shape
        gw = t[:D * K].reshape(D, K) / N
        gb = t[D * K:D * K + K] / N
        loss = t[-1] / N
        return w - lr * gw, b - lr * gb, loss

    def f(w, b, x, y, lr):
        N = x.shape[0]
        k = N // 2
        slots = []
        for xs, ys in ((x[:k], y[:k]), (x[k:], y[k:])):
            r = xs @ w + b - ys
            gw = 2.0 * xs.T @ r
            gb = 2.0 * jnp.sum(r, axis=0)
            tot = jnp.sum(jnp.square(r))
            slots.append(jnp.concatenate([gw.reshape(-1), gb, tot[None]]))
        z = jnp.zeros((n - 1, slots[0].shape[0]), x.dtype)
        s1 = jnp.concatenate([slots[0][None], z])      # slot 0: the first half's sums
        s2 = jnp.concatenate([z[:1], slots[1][None], z[1:]]) if n > 1 else slots[1][None]
        sm = jax.shard_map(lambda w, b, s1, s2, lr: body(w, b, s1, s2, lr, float(N)),
                           mesh=mesh_of(n), in_specs=(P(), P(), P("data"), P("data"), P()),
                           out_specs=(P(), P(), P()), check_vma=False)
        return sm(w, b, s1, s2, lr)
    return jax.jit(f)
