"""How many elements of tests/jax/programs/*'s expected values (JAX 0.10.2's jit outputs) `meshrun
run --exact` reproduces bit for bit, and its largest difference as a share of the default
tolerance (1e-5 absolute + 1e-5 relative). Run from the repository root:

    build/jax-venv/bin/python bench/jax/program_bits.py [build/release/meshrun]

Needs numpy only (no JAX): the expected values are committed.
"""
import glob, json, subprocess, sys
import numpy as np
sys.path.insert(0, "python")
from meshrun_export import compare as cmp  # noqa: E402
M = sys.argv[1] if len(sys.argv) > 1 else "build/release/meshrun"
for name in ["mlp-block-tanh", "mlp-block-erf", "xent", "attention", "coverage"]:
    same = total = 0; worst = 0.0
    for c in sorted(glob.glob(f"tests/jax/programs/{name}/*.json")):
        r = subprocess.run([M, "run", "--exact", f"tests/jax/programs/{name}.json", c], capture_output=True, text=True)
        got = json.loads(r.stdout); exp = json.load(open(c))["expected"]
        for k, v in exp.items():
            w = np.asarray(v, np.float32); g = np.asarray(got[k], np.float32)
            same += int(np.sum(cmp.bit_identical(g, w))); total += w.size
            d = cmp.tolerance_share(g, w)
            worst = max(worst, float(d.max()) if d.size else 0)
    print(f"{name}: {same}/{total} bit-identical, largest difference {100*worst:.2g}% of the tolerance")
