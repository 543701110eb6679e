"""Loops in meshrun beside JAX (issue #48): what an iteration costs beyond its body's work.

  (a) a scan of STEPS small steps outside any shard_map (c = tanh(c * 0.9 + x_i), c f32[4]);
  (b) a ring all-reduce written with fori_loop over 8 devices (tests/jax/corpus/ring_allreduce.py:
      7 ppermute steps of a reduce-scatter, 7 of an all-gather, in a shard_map).

Both are exported with meshrun_export and run by `meshrun run --repeat N` (one process, the
mesh's threads kept): a run's time is (total_s of N + 1 runs - total_s of 1 run) / N from
--timings, so the process start, the read of the case and the write of the result cancel. JAX
runs the same jitted function N times after a warm-up (block_until_ready each); its run's time is
the median. Printed: each one's time per run and per iteration, and meshrun / JAX.

  build/jax-venv/bin/python bench/jax/loops.py build/release/meshrun
"""
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests" / "jax" / "corpus"))

import _common  # noqa: E402,F401 - 8 CPU devices before JAX starts
import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import meshrun_export as mx  # noqa: E402
from per_run import jax_per_run, meshrun_per_run  # noqa: E402
import ring_allreduce  # noqa: E402

STEPS = 10_000
N = 50


def scan_program(c0, xs):
    def step(c, x):
        c = jnp.tanh(c * 0.9 + x)
        return c, c
    return jax.lax.scan(step, c0, xs)


def row(name, iterations, m, j):
    print(f"{name}: meshrun {m * 1e6:.0f} us/run ({m / iterations * 1e9:.0f} ns/iteration), "
          f"JAX {j * 1e6:.0f} us/run ({j / iterations * 1e9:.0f} ns/iteration), "
          f"meshrun/JAX {m / j:.2f}")


def main():
    meshrun = str(Path(sys.argv[1]).resolve())
    stamp = time.strftime("%Y-%m-%d %H:%MZ", time.gmtime())
    print(f"# bench/jax/loops.py {stamp}, jax {jax.__version__}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}, N = {N}")
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        # (a) scan
        c0 = rng.standard_normal(4).astype(np.float32)
        xs = rng.standard_normal((STEPS, 4)).astype(np.float32)
        fn = jax.jit(scan_program)
        prog = mx.export(fn, c0, xs, names=["c0", "xs"], outputs=["c", "ys"], name="scan")
        Path(tmp, "scan.json").write_text(mx.dumps(prog))
        Path(tmp, "scan-case.json").write_text(json.dumps(
            {"input": {"c0": c0.tolist(), "xs": xs.tolist()}}))
        m = meshrun_per_run(meshrun, str(Path(tmp, "scan.json")),
                            str(Path(tmp, "scan-case.json")), N)
        j = jax_per_run(fn, (c0, xs), N)
        row(f"(a) scan of {STEPS} steps, c f32[4]", STEPS, m, j)
        # (b) ring all-reduce with fori_loop, 8 devices, x f32[64, 1024]
        x = rng.standard_normal((64, 1024)).astype(np.float32)
        ring = ring_allreduce.make(8)
        prog = mx.export(ring, x, names=["x"], outputs=["sum"], name="ring")
        Path(tmp, "ring.json").write_text(mx.dumps(prog))
        Path(tmp, "ring-case.json").write_text(json.dumps({"input": {"x": x.tolist()}}))
        m = meshrun_per_run(meshrun, str(Path(tmp, "ring.json")),
                            str(Path(tmp, "ring-case.json")), N)
        j = jax_per_run(ring, (x,), N)
        row("(b) fori_loop ring all-reduce, 8 devices, x f32[64,1024] (14 steps)", 14, m, j)


if __name__ == "__main__":
    main()
