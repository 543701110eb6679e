"""tp-mlp, RIGHT (the control for wrong-hadamard-mixed-weights-psum: mixing applied to the PARTIAL OUTPUTS, not to weights): each device computes its own hidden block and its (B, O) partial output, multiplies the partial by its column of a Sylvester-Hadamard matrix (+-1, from iota) and psums the stack over 'model'; row 0 of H is all ones, so row 0 of the result is exactly the sum of the partials -- an all-reduce of the partial outputs with some extra (ignored) rows. b2 added once after. No weight moves."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(n):
    return jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def hadamard(n):
    k = jax.lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n, n), 1)
    return 1.0 - 2.0 * (jax.lax.population_count(k & j) & 1).astype(jnp.float32)


def make(model=8):
    def body(x, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        c = hadamard(model)[:, jax.lax.axis_index("model")]
        T = jax.lax.psum(c[:, None, None] * (h @ w2)[None], "model")
        return T[0] + b2, h

    return jax.jit(jax.shard_map(body, mesh=mesh_of(model),
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None), P()),
                                 out_specs=(P(), P(None, "model")), check_vma=False))
