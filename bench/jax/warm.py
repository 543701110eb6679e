"""The warm-step row: JAX's jitted shard_map step after compile (3 calls, then block_until_ready,
median of REPEAT calls) beside meshrun's compute + collectives for the same case, at the sizes of
`meshrun bench programs` (.npy inputs written here, seeded). meshrun's warm figure is one process
`--repeat REPEAT+1 --timings`: compute_s + collectives_s (the slowest device's body), the median
of runs 2..REPEAT+1 -- REPEAT warm steps, as JAX's. Beside it, for comparison with earlier
tables, the cold figure: the best of ROUNDS single-run processes (first touch of every buffer).
  build/jax-venv/bin/python bench/jax/warm.py build/release/meshrun [OUTDIR]"""
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import programs as pg  # sets XLA_FLAGS before JAX starts
import jax
import numpy as np

REPEAT, ROUNDS = 20, 3
SIZES = {
    "tp-mlp": ({"model": 8}, dict(x=(256, 1024), w1=(1024, 4096), b1=(4096,), w2=(4096, 256),
                                  b2=(256,))),
    "dp-step": ({"data": 8}, dict(w=(64, 16), b=(16,), x=(65536, 64), y=(65536, 16), lr=())),
    "mlp-train": ({"data": 2, "model": 4}, dict(x=(256, 1024), y=(256, 256), w1=(1024, 4096),
                                                b1=(4096,), w2=(4096, 256), b2=(256,), lr=())),
}


def step(cmd, case):
    """compute_s + collectives_s of `cmd --timings CASE` (with --repeat: the warm median)."""
    r = subprocess.run(cmd + ["--timings", "-o", "/dev/null", str(case)], capture_output=True,
                       text=True, check=True)
    t = json.loads(r.stderr.strip().splitlines()[-1])
    return t["compute_s"] + t["collectives_s"]


def main():
    meshrun = str(Path(sys.argv[1]).resolve())
    out = Path(sys.argv[2] if len(sys.argv) > 2 else Path(meshrun).parent.parent / "jax-warm")
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    rows = []
    for problem, (mesh, shapes) in SIZES.items():
        args, inp = [], {}
        for name in pg.INPUTS[problem]:
            shape = shapes[name]
            if shape == ():
                a = np.float32(0.01)
                inp[name] = 0.01
            else:
                a = (rng.standard_normal(shape) * 0.1).astype(np.float32)
                np.save(out / f"{problem}.{name}.npy", a)
                inp[name] = {"npy": f"{problem}.{name}.npy"}
            args.append(a)
        case = out / f"{problem}.json"
        case.write_text(json.dumps({"problem": problem, "name": "warm", "input": inp,
                                    "mesh": mesh}))
        f = pg.make(problem, mesh)
        dev = [jax.device_put(a) for a in args]
        for _ in range(3):
            jax.block_until_ready(f(*dev))
        ts = []
        for _ in range(REPEAT):
            t = time.perf_counter()
            jax.block_until_ready(f(*dev))
            ts.append(time.perf_counter() - t)
        jt = statistics.median(ts)
        # The same case through the exported program, interpreted (`meshrun run`).
        prog = str(Path(__file__).resolve().parents[2] / "cases" / "programs" / f"{problem}.json")
        hand, interp = [meshrun, problem], [meshrun, "run", prog]
        m, mr = step(hand + ["--repeat", str(REPEAT + 1)], case), \
            step(interp + ["--repeat", str(REPEAT + 1)], case)
        cold = min(step(hand, case) for _ in range(ROUNDS))
        cold_r = min(step(interp, case) for _ in range(ROUNDS))
        rows.append((problem, mesh, jt, m, mr))
        print(f"{problem} on {mesh}: JAX warm step {jt * 1e3:.1f} ms (median of {REPEAT}), "
              f"meshrun warm {m * 1e3:.1f} ms (median of {REPEAT}), meshrun/JAX {m / jt:.2f}x; "
              f"meshrun run (exported, interpreted) warm {mr * 1e3:.1f} ms, {mr / jt:.2f}x; "
              f"cold (best of {ROUNDS} single runs): meshrun {cold * 1e3:.1f} ms, "
              f"meshrun run {cold_r * 1e3:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
