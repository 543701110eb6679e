"""One meshrun case through JAX as a whole process would run it: start Python, import JAX (8 CPU
devices), jit the program, run it, print the result dict rounded to 6 decimals as meshrun does.
  build/jax-venv/bin/python bench/jax/run_case.py dp-step cases/dp-step/example1.json"""
import json
import sys

import programs as pg  # sets XLA_FLAGS before JAX starts
import numpy as np

problem, path = sys.argv[1], sys.argv[2]
case = json.load(open(path))
args = [np.asarray(case["input"][k], np.float64).astype(np.float32) for k in pg.INPUTS[problem]]
outs = pg.make(problem, case.get("mesh", pg.DEFAULT_MESH[problem]))(*args)
print(json.dumps({k: np.round(np.asarray(o, np.float64), 6).tolist()
                  for k, o in zip(pg.OUTPUTS[problem], outs)}, separators=(",", ":")))
