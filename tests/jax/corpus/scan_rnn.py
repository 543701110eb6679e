"""lax.scan in a shard_map body with everything scan has: a const (the weights, closed over),
two carries, xs and ys, and a second scan with reverse=True. A small RNN over time on a batch
split over 'data'; xs and ys are rank 3 (T, N, H).

Source: modelled on jax-ml/jax tests/shard_map_test.py, test_scan_rep_rule (scan over carries
inside shard_map, pcast of the initial carry) and docs/notebooks/shard_map.md "check_vma"
(scan-vma). Constructs: scan (consts, carries, xs, ys, reverse), pcast, rank-3 input/output."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("w", "u", "xs")
OUTPUTS = ("h", "total", "ys", "back")
SHAPES = {"w": "H,H", "u": "H,H", "xs": "T,N,H"}
MESH = (("data", 8),)


def body(w, u, xs):
    n, hdim = xs.shape[1], xs.shape[2]
    h0 = jax.lax.pcast(jnp.zeros((n, hdim), jnp.float32), "data", to="varying")
    t0 = jax.lax.pcast(jnp.zeros((), jnp.float32), "data", to="varying")

    def step(carry, x):
        h, total = carry
        h = jnp.tanh(h @ w + x @ u)
        return (h, total + jnp.sum(h)), h * 2.0
    (h, total), ys = jax.lax.scan(step, (h0, t0), xs)

    def back(c, y):
        c = 0.5 * c + y
        return c, c
    _, bs = jax.lax.scan(back, h0, ys, reverse=True)
    return h, jax.lax.psum(total, "data"), ys, bs


def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:data])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(), P(), P(None, "data")),
                                 out_specs=(P("data"), P(), P(None, "data"),
                                            P(None, "data"))))
