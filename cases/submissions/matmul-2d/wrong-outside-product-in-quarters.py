"""matmul-2d, WRONG (the whole product outside the mesh, in quarters): OUTSIDE every shard_map, on
one device, x @ w is computed as four products -- each half of x's rows times each half of w's
columns (no product ever has a whole x or w operand) -- each quarter zero-padded to the full
(B, H) and handed to the shard_map split P('data', 'model'); the body only adds the four padded
blocks it is handed. No device multiplies anything, and none ever receives x or w."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def make(data=2, model=4):
    def body(q0, q1, q2, q3):
        return q0 + q1 + q2 + q3

    sm = jax.shard_map(body, mesh=mesh_of(data, model), in_specs=(P("data", "model"),) * 4,
                       out_specs=P("data", "model"))

    def f(x, w):
        B, H = x.shape[0], w.shape[1]
        rb, cb = B // 2, H // 2
        qs = []
        for rs in (slice(0, rb), slice(rb, B)):
            for cs in (slice(0, cb), slice(cb, H)):
                q = x[rs] @ w[:, cs]
                qs.append(jnp.pad(q, ((rs.start, B - rs.stop), (cs.start, H - cs.stop))))
        return sm(*qs)
    return jax.jit(f)
