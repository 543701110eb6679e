"""Grading a suite with JAX in one process, as a JAX user would: read every case, run it (jit
compiles once per program, mesh and shape), compare with its expected within atol = rtol = 1e-5,
print PASS/FAIL lines and `N passed, M failed` -- what `meshrun check DIR` does.
  build/jax-venv/bin/python bench/jax/grade_loop.py DIR"""
import json
import sys
import time
from pathlib import Path

t0 = time.perf_counter()
import programs as pg  # noqa: E402  (sets XLA_FLAGS before JAX starts)
import jax  # noqa: E402
import numpy as np  # noqa: E402

t_import = time.perf_counter() - t0
cache, passed, failed, t_run = {}, 0, 0, 0.0
for f in sorted(Path(sys.argv[1]).rglob("*.json")):
    case = json.loads(f.read_text())
    problem = case["problem"]
    mesh = case.get("mesh", pg.DEFAULT_MESH[problem])
    key = (problem, tuple(mesh.items()))
    if key not in cache:
        cache[key] = pg.make(problem, mesh)
    args = [np.asarray(case["input"][k], np.float64).astype(np.float32) for k in pg.INPUTS[problem]]
    t = time.perf_counter()
    outs = jax.block_until_ready(cache[key](*args))
    t_run += time.perf_counter() - t
    ok = all(np.allclose(np.asarray(o, np.float64),
                         np.asarray(case["expected"][k], np.float64).astype(np.float32),
                         atol=1e-5, rtol=1e-5)
             for k, o in zip(pg.OUTPUTS[problem], outs))
    passed += ok
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {f}")
print(f"{passed} passed, {failed} failed")
print(json.dumps({"import_s": round(t_import, 3), "calls_s": round(t_run, 3),
                  "total_s": round(time.perf_counter() - t0, 3), "jitted": len(cache),
                  "compiles": sum(c._cache_size() for c in cache.values())}), file=sys.stderr)
sys.exit(1 if failed else 0)
