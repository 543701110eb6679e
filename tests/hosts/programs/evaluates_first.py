"""dp-step with a long evaluation before its shard_map, for the hosts' fault test (faults_test.sh):
rank 0 evaluates K products of an N x N matrix made from w (about 3 s in one process here, several times that under mpirun) while the other ranks
wait for its shard_map -- the time rank 0's keepalive covers (lib/io/mpi/mpi_engine.cpp). The
products change no output (their mean times 0 is added to w). Exported by
  PYTHONPATH=python:tests/hosts/programs /work/jax-venv/bin/python -m meshrun_export \\
    evaluates_first:make --case cases/dp-step/example1.json -o tests/hosts/programs/evaluates_first.json
"""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

N, K = 768, 100


def mesh_of(n):
    return jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])


def body(w, b, x, y, lr):
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make(data=8):
    f = jax.shard_map(body, mesh=mesh_of(data),
                      in_specs=(P(), P(), P("data"), P("data"), P()),
                      out_specs=(P(), P(), P()))

    def run(w, b, x, y, lr):
        m = jnp.full((N, N), 1e-3, jnp.float32) * jnp.mean(w)
        for _ in range(K):
            m = jnp.tanh(m @ m)
        return f(w + 0.0 * jnp.mean(m), b, x, y, lr)
    return jax.jit(run)
