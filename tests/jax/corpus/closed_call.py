"""A closed_call, as JAX writes one in user programs: jax.grad of jax.checkpoint of a function
holding a scan; scan's partial evaluation moves its loop-invariant known part into a
`closed_call` (jax/_src/lax/control_flow/loops.py, _scan_partial_eval_custom). In a shard_map
body, the gradient psum'd over 'data'.

Source: modelled on jax-ml/jax tests/shard_map_test.py, test_grad_remat / test_remat_basic (remat
under grad inside shard_map) with a scan as in test_rewrite_scan.
Constructs: closed_call, checkpoint, scan, grad inside a shard_map body, psum."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("w", "x")
OUTPUTS = ("gw",)
SHAPES = {"w": "H,H", "x": "N,H"}
MESH = (("data", 8),)


def f(w, x):
    def step(c, xi):
        h = jnp.sin(w * 2.0)  # loop-invariant
        c = jnp.tanh(c @ h + xi)
        return c, c.sum()
    c0 = jax.lax.pcast(jnp.zeros(x.shape[1:], x.dtype), "data", to="varying")
    c, ys = jax.lax.scan(step, c0, x)
    return c.sum() + ys.sum()


def body(w, x):
    g = jax.grad(jax.checkpoint(f))(jax.lax.pcast(w, "data", to="varying"), x)
    return jax.lax.psum(g, "data")


def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:data])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(), P("data")), out_specs=P()))
