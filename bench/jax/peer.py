"""JAX as meshrun's performance peer (bench/README.md, "JAX beside meshrun"), in one run:

  (a) one documented example as a whole process: `meshrun dp-step cases/dp-step/example1.json`
      vs Python starting, importing JAX, jitting dp-step, running and printing it
      (bench/jax/run_case.py), timed in pairs by build/release/alternate;
  (b) grading a suite of 600 cases (200 per program, cases/ and the oracle sweep, expected =
      JAX's outputs): `meshrun check SUITE` vs bench/jax/grade_loop.py SUITE (one process,
      one compile per program, mesh and shape), ROUNDS alternating runs of each.

  build/jax-venv/bin/python bench/jax/peer.py build/release/meshrun   (or: make bench-jax)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PY = sys.executable
PAIRS, ROUNDS, PER_PROGRAM = 10, 3, 200


def suite(build):
    src = build / "jax-check"
    if not (src / "sweep").is_dir():
        subprocess.run([PY, HERE / "oracle.py", "fixtures", src], check=True, cwd=HERE)
    dst = build / "jax-peer" / "suite"
    shutil.rmtree(dst, ignore_errors=True)
    for p in ("dp-step", "tp-mlp", "mlp-train"):
        (dst / p).mkdir(parents=True)
        files = sorted(f for d in ("fixtures", "sweep") for f in (src / d / p).glob("*.json"))
        for f in files[:PER_PROGRAM]:
            shutil.copy(f, dst / p / f.name)
    return dst


def timed(cmd):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - t, r


def main():
    meshrun = str(Path(sys.argv[1]).resolve())
    build = Path(meshrun).parent.parent
    alternate = str(Path(meshrun).parent / "alternate")
    stamp = time.strftime("%Y-%m-%d %H:%MZ", time.gmtime())
    print(f"# bench/jax/peer.py {stamp}, jax {__import__('importlib.metadata').metadata.version('jax')}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    ex = "cases/dp-step/example1.json"
    a = subprocess.run([alternate, str(PAIRS), "2", "--limit", "120", "--", meshrun, "dp-step", ex,
                        "--", PY, str(HERE / "run_case.py"), "dp-step", ex],
                       capture_output=True, text=True, cwd=ROOT)
    ra = json.loads(a.stdout)
    print(f"(a) example as a whole process, {PAIRS} pairs: meshrun {ra['a_median_ms']:.2f} ms, "
          f"JAX {ra['b_median_ms']:.0f} ms, JAX/meshrun {ra['b_median_ms'] / ra['a_median_ms']:.0f}x "
          f"(ratio of medians)")
    prog = str(ROOT / "cases" / "programs" / "dp-step.json")
    a2 = subprocess.run([alternate, str(PAIRS), "2", "--limit", "120", "--", meshrun, "run", prog,
                         ex, "--", PY, str(HERE / "run_case.py"), "dp-step", ex],
                        capture_output=True, text=True, cwd=ROOT)
    ra2 = json.loads(a2.stdout)
    print(f"(a') the same through the exported program (meshrun run): meshrun "
          f"{ra2['a_median_ms']:.2f} ms, JAX {ra2['b_median_ms']:.0f} ms, JAX/meshrun "
          f"{ra2['b_median_ms'] / ra2['a_median_ms']:.0f}x")
    s = suite(build)
    n = len(list(s.rglob("*.json")))
    tm, tj, lm, lj, jstats = [], [], "", "", ""
    for _ in range(ROUNDS):
        t, r = timed([meshrun, "check", str(s)])
        tm.append(t)
        lm = r.stdout.strip().splitlines()[-1]
        t, r = timed([PY, str(HERE / "grade_loop.py"), str(s)])
        tj.append(t)
        lj = r.stdout.strip().splitlines()[-1]
        jstats = r.stderr.strip().splitlines()[-1]
    tr, lr = [], []
    for _ in range(ROUNDS):
        t0, lines = 0.0, []
        for p in ("dp-step", "tp-mlp", "mlp-train"):
            t, r = timed([meshrun, "check", "--program", str(ROOT / "cases" / "programs" / f"{p}.json"),
                          str(s / p)])
            t0 += t
            lines.append(r.stdout.strip().splitlines()[-1])
        tr.append(t0)
        lr = lines
    mm, mj = statistics.median(tm), statistics.median(tj)
    mr = statistics.median(tr)
    print(f"(b') the same {n} cases through the exported programs (meshrun check --program, one "
          f"run per program): {mr:.2f} s ({'; '.join(lr)}), JAX/meshrun {mj / mr:.1f}x")
    print(f"(b) grading {n} cases, median of {ROUNDS} alternating runs: meshrun check {mm:.2f} s "
          f"({lm}), JAX loop {mj:.2f} s ({lj}; {jstats}), JAX/meshrun {mj / mm:.1f}x")
    print(json.dumps({"date": stamp, "a": ra, "a_run": ra2, "b_run_s": tr,
                      "b": {"cases": n, "meshrun_s": tm, "jax_s": tj,
                                                    "meshrun_last": lm, "jax_last": lj,
                                                    "jax_detail": json.loads(jstats)}}))


if __name__ == "__main__":
    main()
