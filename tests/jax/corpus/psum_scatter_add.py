"""psum_scatter written by hand: each step passes a partial sum one device up the ring with
ppermute and adds it into the chunk it belongs to with `x.at[j].add(update)` -- a `scatter-add`
in the jaxpr (issue #49: refused before).

Source: jax-ml/jax docs/notebooks/shard_map.md, "Collectives tutorial" / "ppermute" (the
psum_scatter "in terms of a sequence of ppermutes and local additions", its f8 with
tiled=True), on float32 rows of C columns. Constructs: x.at[j].add (scatter-add) at a traced
index, x[j] (gather / dynamic_slice), ppermute, axis_index."""
from functools import partial

import _common  # noqa: F401

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("x",)
OUTPUTS = ("y",)
SHAPES = {"x": "N,C"}
MESH = (("i", 8),)


def psum_scatter(x, axis_name, *, tiled=False):
    size = jax.lax.axis_size(axis_name)
    idx = jax.lax.axis_index(axis_name)
    if tiled:
        x = x.reshape(size, -1, *x.shape[1:])
    shift = partial(jax.lax.ppermute, axis_name=axis_name,
                    perm=[(i, (i - 1) % size) for i in range(size)])
    for i in range(1, size):
        update = shift(x[(idx + i) % size])
        x = x.at[(idx + i + 1) % size].add(update)
    return x[idx]


def make(i=8):
    mesh = jax.make_mesh((i,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:i])
    return jax.jit(jax.shard_map(lambda x: psum_scatter(x, "i", tiled=True), mesh=mesh,
                                 in_specs=P("i"), out_specs=P("i")))
