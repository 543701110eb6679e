"""The order of a mesh's axes (sneaky12's right FAIL; JAX's ppermute numbering): a program whose
shard_map declares its mesh ('model', 'data') where the run's mesh is ('data', 'model'), followed
by a shard_map on the mesh in that order; each calls the collectives over both axes, naming them
in both orders.

What it pins (JAX 0.10.2 on CPU): a ppermute over several axes numbers the members in the order of
the declared mesh's axes, whatever the order its `axis_name` tuple lists them (JAX sorts each
replica group's device ids, jax/_src/lax/parallel.py _pcollectives_lowering_common), while
axis_index, all_gather, psum_scatter and all_to_all number them in the tuple's order, and the
specs P(('model', 'data')) and P(('data', 'model')) split a dimension in the order they list.
Source: jax.make_mesh's axis order as users choose it (JAX's shard_map tutorial declares
('x', 'y') or ('i', 'j') meshes in either order of use). Constructs: ppermute, axis_index,
all_gather, psum_scatter, all_to_all and psum over two axes; two shard_maps on one mesh declared in
two orders."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("fwd", "bwd", "index", "gathered", "scattered", "exchanged", "sums", "fwd2", "index2")
SHAPES = {"x": "N,D"}
MESH = (("data", 2), ("model", 4))
BOTH = P(("data", "model"))
BOTH_MODEL_FIRST = P(("model", "data"))


def shift(k):
    return [(j, (j + k) % 8) for j in range(8)]


def first(x):
    fwd = lax.ppermute(x, ("data", "model"), shift(1))
    bwd = lax.ppermute(x, ("model", "data"), [(0, 3), (3, 5), (5, 1), (1, 7), (7, 2), (2, 6),
                                              (6, 4), (4, 0)])
    index = lax.axis_index(("model", "data")) * 10 + lax.axis_index(("data", "model"))
    gathered = lax.all_gather(x, ("model", "data"), axis=0, tiled=True)
    scattered = lax.psum_scatter(x * x, ("model", "data"), scatter_dimension=0, tiled=True)
    exchanged = lax.all_to_all(x, ("model", "data"), 0, 0, tiled=True)
    sums = lax.psum(x, ("model", "data")) + lax.psum(x * 3, ("data", "model"))
    return (fwd, bwd, jnp.full((1,), index, jnp.int32), gathered[3::8],
            scattered, exchanged, sums)


def second(x):
    return (lax.ppermute(x, ("model", "data"), shift(3)),
            jnp.full((1,), lax.axis_index(("model", "data")), jnp.int32))


def make(data=2, model=4):
    devices = jax.devices()[:data * model]
    model_first = jax.make_mesh((model, data), ("model", "data"), axis_types=(AxisType.Auto,) * 2,
                                devices=devices)
    data_first = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                               devices=devices)
    f1 = jax.shard_map(first, mesh=model_first, in_specs=BOTH,
                       out_specs=(BOTH, BOTH, BOTH_MODEL_FIRST, BOTH, BOTH_MODEL_FIRST,
                                  BOTH_MODEL_FIRST, P()))
    f2 = jax.shard_map(second, mesh=data_first, in_specs=BOTH_MODEL_FIRST,
                       out_specs=(BOTH, BOTH))

    def program(x):
        return f1(x) + f2(x)

    return jax.jit(program)
