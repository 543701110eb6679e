"""Gather and scatter beside a copy, in meshrun and in JAX (issue #49: "a gather or scatter of N
elements within a small factor of a copy of N elements").

Each program is one equation on N = 2^20 float32 elements, outside any shard_map:
  copy          lax.dynamic_slice of N of x f32[2N]: one memcpy of N elements (the baseline)
  gather        lax.gather of N scalars at random indices i32[N, 1] (mode promise_in_bounds)
  gather-fill   the same, mode fill (each index bounds-checked)
  gather-rows   W[ids]-style: N/64 random rows of 64 from W f32[N/64 * 4, 64] (an embedding)
  scatter-add   lax.scatter_add of N scalars into f32[N] at random indices (mode fill)
  scatter-rows  N/64 rows of 64 added into f32[N/64 * 4, 64] at random row indices
Exported with meshrun_export and timed as bench/jax/loops.py times a program: `meshrun run
--repeat` (a run = (total_s of R + 1 runs - total_s of 1 run) / R, the best of 3 each, so the
start, the read of the case and the write of the result cancel) against the same jitted function
in JAX (median of R warm calls). Printed: each one's time per run, ns per element, and the ratio
to its copy.

  build/jax-venv/bin/python bench/jax/indexing.py build/release/meshrun
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import numpy as np  # noqa: E402
import jax  # noqa: E402
from jax import lax  # noqa: E402

import meshrun_export as mx  # noqa: E402

N = 1 << 20
ROW = 64
R = 20
GD = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
GROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                   start_index_map=(0,))
SD = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                 scatter_dims_to_operand_dims=(0,))
SROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                    scatter_dims_to_operand_dims=(0,))


def programs(rng):
    x = rng.standard_normal(2 * N).astype(np.float32)
    idx = rng.integers(0, N, (N, 1)).astype(np.int32)
    rows = N // ROW
    w = rng.standard_normal((rows * 4, ROW)).astype(np.float32)
    ids = rng.integers(0, rows * 4, (rows, 1)).astype(np.int32)
    u = rng.standard_normal(N).astype(np.float32)
    ur = rng.standard_normal((rows, ROW)).astype(np.float32)
    z = np.zeros(N, np.float32)
    zr = np.zeros((rows * 4, ROW), np.float32)
    return [
        ("copy", lambda x: lax.dynamic_slice(x, (N // 2,), (N,)), (x,)),
        ("gather", lambda x, i: lax.gather(x, i, GD, (1,), mode="promise_in_bounds"),
         (x[:N], idx)),
        ("gather-fill", lambda x, i: lax.gather(x, i, GD, (1,), mode="fill", fill_value=0.0),
         (x[:N], idx)),
        ("gather-rows", lambda w, i: lax.gather(w, i, GROWS, (1, ROW), mode="promise_in_bounds"),
         (w, ids)),
        ("scatter-add", lambda z, i, u: lax.scatter_add(z, i, u, SD, mode="fill"), (z, idx, u)),
        ("scatter-rows", lambda z, i, u: lax.scatter_add(z, i, u, SROWS, mode="fill"),
         (zr, ids, ur)),
    ]


def meshrun_per_run(meshrun, prog, case):
    def total(repeat):
        r = subprocess.run([meshrun, "run", "--repeat", str(repeat), "--timings", prog, case],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"meshrun run {prog}: exit {r.returncode}: {r.stderr.strip()}")
        return json.loads(r.stderr.strip().splitlines()[-1])["total_s"]
    one = min(total(1) for _ in range(3))
    many = min(total(R + 1) for _ in range(3))
    return (many - one) / R


def jax_per_run(fn, args):
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(R):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    meshrun = str(Path(sys.argv[1]).resolve())
    stamp = time.strftime("%Y-%m-%d %H:%MZ", time.gmtime())
    print(f"# bench/jax/indexing.py {stamp}, jax {jax.__version__}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}, N = {N}, R = {R}")
    rng = np.random.default_rng(0)
    base = {}
    print("| program | meshrun | ns/element | / copy | JAX | ns/element | / copy |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, f, args in programs(rng):
            fn = jax.jit(f)
            names = ["a", "b", "c"][:len(args)]
            prog = mx.export(fn, *args, names=names, outputs=["out"], name=name)
            Path(tmp, "p.json").write_text(mx.dumps(prog))
            Path(tmp, "c.json").write_text(json.dumps(
                {"input": {n: a.tolist() for n, a in zip(names, args)}}))
            m = meshrun_per_run(meshrun, str(Path(tmp, "p.json")), str(Path(tmp, "c.json")))
            j = jax_per_run(fn, args)
            if name == "copy":
                base = {"m": m, "j": j}
            print(f"| {name} | {m * 1e3:.2f} ms | {m / N * 1e9:.2f} | {m / base['m']:.1f}x "
                  f"| {j * 1e3:.2f} ms | {j / N * 1e9:.2f} | {j / base['j']:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
