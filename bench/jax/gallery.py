"""The gallery (cases/submissions/) against live JAX: every submission, right or wrong, run by
JAX and by `meshrun run --exact` from its committed program file -- a right one on every case of
its program, a wrong one on the case its .expect grades it on -- on the case's mesh; meshrun must
compute what JAX computes for the same program (within 1e-5, absolute and relative, as the cases
are graded), whatever the exercise's verdict on it.

    build/jax-venv/bin/python bench/jax/gallery.py build/release/meshrun [NAME...]

(NAME: only the submissions whose `<program>/<name>` contains one of them.)

Prints one line per submission (cases run, cases with no export for their shape or mesh, the
share of elements bit-identical to JAX, the largest difference as a share of the tolerance) and
exits 1 if any element is beyond the tolerance or meshrun fails. A wrong submission may be
refused where it leaves a value that differs per device through a replicating out_spec
(check_vma=False), of which JAX returns one device's. A submission whose `.expect` says exit 0
(a right solution) must also compute, by JAX itself, every case's `expected` within the
tolerance: the gallery's "right" is JAX's word, not meshrun's. `make jax-check` runs it.
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
from meshrun_export import compare as cmp  # noqa: E402



def load(path):
    spec = importlib.util.spec_from_file_location(Path(path).stem.replace("-", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def case_mesh(prog, case):
    order = [a for a, _ in mx.EXERCISES[prog]["mesh"]]
    m = case["mesh"] or dict(mx.EXERCISES[prog]["mesh"])
    return {a: int(m[a]) for a in sorted(m, key=order.index)}


def main(meshrun, only=()):
    bad = 0
    for sub in sorted(glob.glob(str(ROOT / "cases/submissions/*/*.py"))):
        prog = Path(sub).parent.name
        name = f"{prog}/{Path(sub).stem}"
        if only and not any(o in name for o in only):
            continue
        make = load(sub).make
        names = [n for n, _ in mx.EXERCISES[prog]["inputs"]]
        outs = mx.EXERCISES[prog]["outputs"]
        expect = Path(sub).with_suffix(".expect").read_text().splitlines()
        right = len(expect) > 1 and expect[1].strip() == "0"
        fns, ran, no_export, same, total, worst = {}, 0, 0, 0, 0, 0.0  # worst: share of the tolerance
        refused = 0
        # A right submission on every case (its numbers are JAX's word on the case's expected); a
        # wrong one on the case its .expect grades (JAX's numbers for the same program: one case
        # checks the interpreter on it, every case was the half of this script's 10 minutes
        # that jitted a wrong program once per case's mesh).
        paths = sorted(glob.glob(str(Path(mx.EXERCISES[prog]["cases"]) / "*.json")))
        if not right and expect and expect[0].split()[-1].endswith(".json"):
            paths = [str(ROOT / expect[0].split()[-1])]
        for path in paths:
            case = mx.load_case(path)
            mesh = case_mesh(prog, case)
            r = subprocess.run([meshrun, "run", "--exact", str(Path(sub).with_suffix(".json")),
                                path], capture_output=True, text=True)
            if r.returncode == 2 and ("no export" in r.stderr or
                                      "the program takes" in r.stderr or
                                      # a spec the case's shape cannot split (JAX refuses too)
                                      "not evenly divisible" in r.stderr):
                no_export += 1
                continue
            if r.returncode == 2 and "hold different values" in r.stderr and not right:
                # A mistake leaving a value that differs per device through a replicating
                # out_spec (check_vma=False): JAX returns one device's, meshrun refuses it.
                refused += 1
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
            if not isinstance(want, (tuple, list)):  # one output (ring-allreduce's out)
                want = (want,)
            if right:
                expected = json.loads(Path(path).read_text())["expected"]
                for o, w in zip(outs, want):
                    e = np.asarray(expected[o], dtype=np.float64)
                    w64 = np.asarray(w, dtype=np.float64)
                    if w64.shape != e.shape or not np.all(cmp.within(w64, e)):
                        print(f"FAIL {name}: {Path(path).name}: a right solution, but JAX's {o} "
                              f"is not the case's expected")
                        bad += 1
            for o, w in zip(outs, want):
                g = np.asarray(got[o], dtype=np.float32)
                w = np.asarray(w, dtype=np.float32)
                share = cmp.tolerance_share(g, w)
                worst = max(worst, float(share.max()) if share.size else 0.0)
                total += w.size
                same += int(np.sum(cmp.bit_identical(g, w)))
                if np.any(share > 1.0):
                    d = np.abs(g.astype(np.float64) - w)
                    print(f"FAIL {name}: {Path(path).name}: {o} differs from JAX by {d.max():.3g}")
                    bad += 1
            ran += 1
        print(f"{name}: {ran} cases as JAX computes them"
              + (f", {no_export} with no export for their shape" if no_export else "")
              + (f", {refused} refused (a value that differs per device declared replicated)"
                 if refused else "")
              + f"; {same} of {total} elements bit-identical, the largest difference "
              f"{100 * worst:.2g}% of the tolerance")
    print("gallery: " + ("ok" if not bad else f"{bad} failure(s)"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1]), sys.argv[2:]))
