"""Per-device batched linear solves, the systems split 8 ways over 'batch': each device makes its
own block of symmetric positive definite systems a = x x^T + D I, factors them (cholesky) and
solves them three ways -- cho_solve (two triangular_solves), jnp.linalg.solve (lu with partial
pivoting, then custom_linear_solve holding two triangular_solves and the permutation's gather) and
the LU of x itself, whose int32 pivots and permutation are outputs -- stacks two solutions
(jnp.stack: JAX 0.10.2's `stack` primitive) and sums the residual over the mesh (psum). Beside
it, jax.value_and_grad of the mean squared solution with respect to x and b: the gradients of
cholesky and of solve, more triangular_solves (left_side False among them) and the transposed
custom_linear_solve.

Source: the per-device work of jax-ml/jax docs/notebooks/shard_map.md ("8-way batch data
parallelism": each device its own block, a psum after), with jax.numpy.linalg and
jax.scipy.linalg as users call them. Constructs: cholesky, triangular_solve, lu,
custom_linear_solve, stack, psum, value_and_grad of shard_map."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

INPUTS = ("x", "b")
OUTPUTS = ("loss", "gx", "gb", "chol", "y", "z", "both", "lu", "pivots", "perm", "resid")
SHAPES = {"x": "N,D,D", "b": "N,D,K"}
MESH = (("batch", 8),)


def spd(x):
    d = x.shape[-1]
    return x @ jnp.swapaxes(x, -1, -2) + d * jnp.eye(d, dtype=x.dtype)


def solves(x, b):
    a = spd(x)
    chol = jnp.linalg.cholesky(a)
    y = jax.vmap(lambda c, r: jsl.cho_solve((c, True), r))(chol, b)
    z = jnp.linalg.solve(a, b)
    lu, pivots, perm = jax.lax.linalg.lu(x)
    both = jnp.stack([y, z], axis=1)
    resid = jax.lax.psum(jnp.sum((a @ z - b) ** 2), "batch")
    return chol, y, z, both, lu, pivots, perm, resid


def loss_fn(x, b):
    a = spd(x)
    z = jnp.linalg.solve(a, b)
    chol = jnp.linalg.cholesky(a)
    # (a sum of chol, not a mean: the mean divides by D^2*N_blk, a dimension expression with a
    # power that meshrun does not read)
    return jax.lax.pmean(jnp.mean(z ** 2) + 0.01 * jnp.sum(chol), "batch")


def make(batch=8):
    mesh = jax.make_mesh((batch,), ("batch",), devices=jax.devices()[:batch])
    sp = P("batch")
    fwd = jax.shard_map(solves, mesh=mesh, in_specs=(sp, sp),
                        out_specs=(sp, sp, sp, sp, sp, sp, sp, P()))
    vg = jax.value_and_grad(jax.shard_map(loss_fn, mesh=mesh, in_specs=(sp, sp), out_specs=P()),
                            argnums=(0, 1))

    def step(x, b):
        loss, (gx, gb) = vg(x, b)
        return (loss, gx, gb) + fwd(x, b)
    return jax.jit(step)
