"""tp-mlp, right: hidden units dealt round-robin -- device k owns units k, k + n, k + 2n, ... (w1's columns,
b1, w2's rows regrouped outside by a reshape/transpose, no arithmetic) -- each device computes its units'
hidden values and partial output, psum over 'model', b2 once; hidden is returned split and put back in
unit order outside by the inverse reshape/transpose. Every device holds H/n units, as in the contiguous split."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    return jax.lax.psum(h @ w2, "model") + b2, h


def make(model=8):
    n = model
    sm = jax.shard_map(body, mesh=mesh_of(n),
                       in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                       out_specs=(P(), P(None, "model")))

    def deal(a, axis):          # unit u = j*n + k  ->  position k*(H/n) + j
        a = jnp.moveaxis(a, axis, 0)
        H = a.shape[0]
        a = a.reshape(H // n, n, *a.shape[1:]).swapaxes(0, 1).reshape(H, *a.shape[1:])
        return jnp.moveaxis(a, 0, axis)

    def undeal(a, axis):
        a = jnp.moveaxis(a, axis, 0)
        H = a.shape[0]
        a = a.reshape(n, H // n, *a.shape[1:]).swapaxes(0, 1).reshape(H, *a.shape[1:])
        return jnp.moveaxis(a, 0, axis)

    def prog(x, w1, b1, w2, b2):
        out, h = sm(x, deal(w1, 1), deal(b1, 0), deal(w2, 0), b2)
        return out, undeal(h, 1)

    return jax.jit(prog)
