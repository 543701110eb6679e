"""The sums over devices on float16, bfloat16 and the small integers over 8 devices (issue #49,
dtypes): psum, psum_scatter and lax.pmean (a psum and a division in the jaxpr). XLA:CPU promotes a
bf16 all-reduce or reduce-scatter to float32 and converts the sum once; an f16 one it runs in f16,
the devices folded in rank order with each add rounded; integers wrap.

Source: jax-ml/jax tests/shard_map_test.py's test_psum / test_reduce_scatter shapes, on the narrow
dtypes. Constructs: psum, psum_invariant, reduce_scatter (psum_scatter), div of f16 / bf16, sums
of int8 and uint16 that wrap, a bf16 psum_scatter converted to float32."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("h", "b", "c", "w")
OUTPUTS = ("h_sum", "h_scatter", "h_mean", "b_scatter", "b_mean", "b_scatter_f32",
           "c_sum", "c_scatter", "w_sum")
SHAPES = {"h": "N,D", "b": "N,D", "c": "N,D", "w": "N,D"}
DTYPES = {"h": "f16", "b": "bf16", "c": "i8", "w": "u16"}
MESH = (("i", 8),)


def body(h, b, c, w):
    return (lax.psum(h, "i"), lax.psum_scatter(h, "i", scatter_dimension=0, tiled=True),
            lax.pmean(h, "i"), lax.psum_scatter(b, "i", scatter_dimension=1, tiled=True),
            lax.pmean(b, "i"),
            lax.psum_scatter(b, "i", scatter_dimension=0, tiled=True).astype(jnp.float32),
            lax.psum(c, "i"), lax.psum_scatter(c, "i", scatter_dimension=0, tiled=True),
            lax.psum(w, "i"))


def make(i=8):
    mesh = jax.make_mesh((i,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:i])
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"),
                                 out_specs=(P(), P("i"), P(), P("i", None), P(), P("i"), P(),
                                            P("i"), P())))
