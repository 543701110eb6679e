"""The gallery (cases/submissions/) against live JAX: every submission, right or wrong, run by
JAX and by `meshrun run --exact` from its committed program file on every case of its program,
on the case's mesh; meshrun must compute what JAX computes for the same program (within 1e-5,
absolute and relative, as the cases are graded), whatever the exercise's verdict on it.

    build/jax-venv/bin/python bench/jax/gallery.py build/release/meshrun

Prints one line per submission (cases run, cases with no export for their shape or mesh, the
share of elements bit-identical to JAX, the largest difference as a share of the tolerance)
and exits 1 if any element is
beyond the tolerance or meshrun fails. `make jax-check` runs it.
"""
import glob
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import programs as pg  # noqa: F401 - sets XLA_FLAGS before JAX starts
import jax
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import meshrun_export as mx  # noqa: E402

TOL = 1e-5


def load(path):
    spec = importlib.util.spec_from_file_location(Path(path).stem.replace("-", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def case_mesh(prog, case):
    order = [a for a, _ in mx.EXERCISES[prog]["mesh"]]
    m = case["mesh"] or dict(mx.EXERCISES[prog]["mesh"])
    return {a: int(m[a]) for a in sorted(m, key=order.index)}


def main(meshrun):
    bad = 0
    for sub in sorted(glob.glob(str(ROOT / "cases/submissions/*/*.py"))):
        prog = Path(sub).parent.name
        name = f"{prog}/{Path(sub).stem}"
        make = load(sub).make
        names = [n for n, _ in mx.EXERCISES[prog]["inputs"]]
        outs = mx.EXERCISES[prog]["outputs"]
        fns, ran, no_export, same, total, worst = {}, 0, 0, 0, 0, 0.0  # worst: share of TOL
        for path in sorted(glob.glob(str(ROOT / f"cases/{prog}/*.json"))):
            case = mx.load_case(path)
            mesh = case_mesh(prog, case)
            r = subprocess.run([meshrun, "run", "--exact", str(Path(sub).with_suffix(".json")),
                                path], capture_output=True, text=True)
            if r.returncode == 2 and ("no export" in r.stderr or
                                      "the program takes" in r.stderr):
                no_export += 1
                continue
            if r.returncode not in (0, 1):  # 1: differs from the case's expected (a wrong one)
                print(f"FAIL {name}: {Path(path).name}: meshrun exit {r.returncode}: "
                      f"{r.stderr.strip()}")
                bad += 1
                continue
            got = json.loads(r.stdout)
            key = tuple(mesh.items())
            if key not in fns:
                fns[key] = make(**mesh)
            want = jax.device_get(fns[key](*[case["input"][n] for n in names]))
            for o, w in zip(outs, want):
                g = np.asarray(got[o], dtype=np.float32)
                w = np.asarray(w, dtype=np.float32)
                d = np.abs(g.astype(np.float64) - w)
                share = d / (TOL + TOL * np.abs(w.astype(np.float64)))
                worst = max(worst, float(share.max()) if d.size else 0.0)
                total += w.size
                same += int(np.sum(g.view(np.int32) == w.view(np.int32)))
                if np.any(d > TOL + TOL * np.abs(w)):
                    print(f"FAIL {name}: {Path(path).name}: {o} differs from JAX by {d.max():.3g}")
                    bad += 1
            ran += 1
        print(f"{name}: {ran} cases as JAX computes them"
              + (f", {no_export} with no export for their shape" if no_export else "")
              + f"; {same} of {total} elements bit-identical, the largest difference "
              f"{100 * worst:.2g}% of the tolerance")
    print("gallery: " + ("ok" if not bad else f"{bad} failure(s)"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1])))
