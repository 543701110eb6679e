"""ring-allreduce wrong-platform-dependent-no-ring-off-cpu: lax.platform_dependent(x, cpu=the
naive ring of ppermutes, default=n * x): on CPU (JAX's and meshrun's platform) the textbook ring;
on any accelerator each device returns n times its own block -- no communication, wrong sums.
meshrun's platform_index takes CPU's entry; the file's collectives (every branch) are ppermutes
between neighbours, and the default branch holds nothing. Truly wrong off CPU (as
tp-mlp/wrong-platform-dependent-no-psum-off-cpu: lowered for cuda/tpu, no collective-permute)."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("ring",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def ring(x, n):
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, cur = x, x
    for _ in range(n - 1):
        cur = jax.lax.ppermute(cur, "ring", right)
        acc = acc + cur
    return acc


def make(ring_n=8, **kw):
    n = kw.get("ring", ring_n)
    body = lambda x: jax.lax.platform_dependent(x, cpu=lambda v: ring(v, n), default=lambda v: n * v)
    return jax.jit(jax.shard_map(body, mesh=mesh_of(n), in_specs=P("ring", None), out_specs=P(),
                                 check_vma=False))
