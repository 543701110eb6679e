"""jax.remat of a shard_map, differentiated: the gradient of sum(sin(sin(x))) where the
shard_map itself is under jax.checkpoint.

Source: jax-ml/jax tests/shard_map_test.py, test_remat_basic (jax.remat over
shard_map(sin(sin(x))), jax.grad(lambda x: f(x).sum())).
Constructs: checkpoint (remat2) around a shard_map, grad."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("y", "g")
SHAPES = {"x": "N"}
MESH = (("i", 8),)


def make(i=8):
    # the test's axis is 'x'; here 'i', as a factory's parameters are the mesh axes and 'x' is
    # the input's name
    mesh = jax.make_mesh((i,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:i])
    f = jax.remat(jax.shard_map(lambda v: jnp.sin(jnp.sin(v)), mesh=mesh, in_specs=P("i"),
                                out_specs=P("i")))

    def step(v):
        return f(v), jax.grad(lambda v: f(v).sum())(v)
    return jax.jit(step)
