"""lax.cond on a psum'd predicate with a psum inside one branch, and lax.switch on an i32 input
(JAX clamps the index before `cond`).

Source: jax-ml/jax tests/shard_map_test.py, test_cond_rep_rule (cond on jnp.any(x > 0) inside
shard_map) and test_switch_rep_rule (switch(n, [x, x + 1, x + 2]) with n replicated).
Constructs: cond (2 branches, a collective in a branch), switch (3 branches), clamp, i32 input."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x", "n")
OUTPUTS = ("c", "s")
SHAPES = {"x": "N,D", "n": ""}
DTYPES = {"n": "i32"}
INTS = {"n": (-1, 4)}
MESH = (("data", 8),)


def body(x, n):
    pos = jax.lax.psum(jnp.sum(x), "data") > 0

    def centre(v):  # subtracts the global column mean: a psum inside the branch
        return v - jax.lax.psum(jnp.sum(v, axis=0), "data") / (v.shape[0] * 8)

    def scale(v):
        return v * 2.0
    c = jax.lax.cond(pos, centre, scale, x)
    s = jax.lax.switch(n, [lambda v: v, lambda v: v + 1.0, lambda v: jnp.tanh(v) + 2.0], x)
    return c, s


def make(data=8):
    mesh = jax.make_mesh((data,), ("data",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:data])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("data"), P()),
                                 out_specs=(P("data"), P("data"))))
