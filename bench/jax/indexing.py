"""JAX beside bench/indexing_bench.cpp (issue #49): the same gathers and scatters of N = 2^20
float32 elements, each one jitted lax call, timed as the median of R warm calls
(block_until_ready each), with its ratio to JAX's own copy. The programs, their shapes and
indices are indexing_bench's (random int32 indices; rows of 64):

  copy             lax.dynamic_slice of N of x f32[2N]
  gather           N scalars at random indices i32[N, 1], mode promise_in_bounds (x[i])
  gather-seq       the same at indices 0 .. N - 1
  gather-fill      mode fill (jnp.take)
  gather-batched   take_along_axis: x f32[N/8, 8], element k[b, j] of row b (batching dims)
  gather-rows      W[ids]: N/64 random rows of 64 from f32[N/64, 64]
  scatter-add-seq  N scalars added at indices 0 .. N - 1 into f32[N], mode fill
  scatter-add      the same at random indices
  scatter-rows     N/64 rows of 64 added into f32[N/64, 64] at random rows

  build/jax-venv/bin/python bench/jax/indexing.py
"""
import os
import statistics
import time

import numpy as np
import jax
from jax import lax

N = 1 << 20
ROW = 64
R = 51
GD = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
BATCH = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
                                   operand_batching_dims=(0,), start_indices_batching_dims=(0,))
GROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                   start_index_map=(0,))
SD = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                 scatter_dims_to_operand_dims=(0,))
SROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                    scatter_dims_to_operand_dims=(0,))


def programs(rng):
    rows = N // ROW
    x = rng.standard_normal(2 * N).astype(np.float32)
    idx = rng.integers(0, N, (N, 1)).astype(np.int32)
    seq = np.arange(N, dtype=np.int32).reshape(N, 1)
    w = rng.standard_normal((rows, ROW)).astype(np.float32)
    ids = rng.integers(0, rows, (rows, 1)).astype(np.int32)
    u = rng.standard_normal(N).astype(np.float32)
    ur = rng.standard_normal((rows, ROW)).astype(np.float32)
    z = np.zeros(N, np.float32)
    zr = np.zeros((rows, ROW), np.float32)
    return [
        ("copy", lambda x, s: lax.dynamic_slice(x, (s,), (N,)), (x, np.int32(N // 3))),
        ("gather", lambda x, i: lax.gather(x, i, GD, (1,), mode="promise_in_bounds"),
         (x[:N], idx)),
        ("gather-seq", lambda x, i: lax.gather(x, i, GD, (1,), mode="promise_in_bounds"),
         (x[:N], seq)),
        ("gather-fill", lambda x, i: lax.gather(x, i, GD, (1,), mode="fill", fill_value=0.0),
         (x[:N], idx)),
        ("gather-batched", lambda x, i: lax.gather(x, i, BATCH, (1, 1), mode="clip"),
         (x[:N].reshape(N // 8, 8), (idx % 8).reshape(N // 8, 8, 1))),
        ("gather-rows", lambda w, i: lax.gather(w, i, GROWS, (1, ROW), mode="promise_in_bounds"),
         (w, ids)),
        ("scatter-add-seq", lambda z, i, u: lax.scatter_add(z, i, u, SD, mode="fill"),
         (z, seq, u)),
        ("scatter-add", lambda z, i, u: lax.scatter_add(z, i, u, SD, mode="fill"), (z, idx, u)),
        ("scatter-rows", lambda z, i, u: lax.scatter_add(z, i, u, SROWS, mode="fill"),
         (zr, ids, ur)),
    ]


def per_call(fn, args):
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(R):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    stamp = time.strftime("%Y-%m-%d %H:%MZ", time.gmtime())
    print(f"# bench/jax/indexing.py {stamp}, jax {jax.__version__}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}, N = {N}, median of {R}")
    copy = None
    for name, f, args in programs(np.random.default_rng(0)):
        args = tuple(jax.device_put(a) for a in args)
        t = per_call(jax.jit(f), args)
        copy = copy or t
        print(f"{name:<16} {t * 1e3:8.3f} ms {t / N * 1e9:7.2f} ns/element {t / copy:6.1f}x copy",
              flush=True)


if __name__ == "__main__":
    main()
