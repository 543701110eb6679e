"""tp-mlp wrong-platform-dependent-no-psum-off-cpu: out = lax.platform_dependent(partial,
cpu=psum over 'model', default=n * partial): on CPU (JAX's and meshrun's platform) the textbook
psum; on any accelerator (gpu, tpu: where an 8-device mesh really runs) each device returns n times
its own partial -- no all-reduce, wrong numbers. meshrun's platform_index takes CPU's entry and
judges only the numbers of that branch (every branch is run for the holds checks, which the
default branch passes: it holds nothing). Truly wrong: off CPU (truth14_platform.py lowers the
program for cuda and tpu: the HLO holds no all-reduce, and the default branch run as is gives
out off by far)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


SPECS = dict(in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
             out_specs=(P(), P(None, "model")))


def body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    part = h @ w2
    n = jax.lax.axis_size("model")
    summed = jax.lax.platform_dependent(part, cpu=lambda p: jax.lax.psum(p, "model"),
                                        default=lambda p: n * p)
    return summed + b2, h


def make(model=8):
    return jax.jit(jax.shard_map(body, mesh=mesh_of(model), check_vma=False, **SPECS))
