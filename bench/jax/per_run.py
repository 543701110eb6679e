"""Per-run times for the benchmarks that set meshrun beside JAX (conv.py, loops.py): meshrun's
from `meshrun run --repeat R --timings` (the difference of R = n + 1 and R = 1 over n, the best of
3 each, so process start and loading cancel), JAX's the median of n calls of a warmed jit."""
import json
import statistics
import subprocess
import time

import jax


def meshrun_per_run(meshrun, prog, case, n):
    def total(repeat):
        r = subprocess.run([meshrun, "run", "--repeat", str(repeat), "--timings", prog, case],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"meshrun run {prog}: exit {r.returncode}: {r.stderr.strip()}")
        return json.loads(r.stderr.strip().splitlines()[-1])["total_s"]
    one = min(total(1) for _ in range(3))
    many = min(total(n + 1) for _ in range(3))
    return (many - one) / n


def jax_per_run(fn, args, n):
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(n):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return statistics.median(times)
