"""Measures meshrun's linear algebra (lib/interp/ops/linalg.cpp) against live JAX on CPU: for each
primitive and size, a batch of 4 random systems (seeded), exported and run by meshrun
(build/release/meshrun), compared element by element. Prints, per row: the elements that differ
from JAX's bits, the largest difference in ulps, and the largest |meshrun - JAX| over the largest
|JAX| (a normwise error). docs/program-format.md quotes its output. Needs live JAX:

    build/jax-venv/bin/python tests/jax/linalg_ulps.py [--meshrun build/release/meshrun]
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.argv, _ARGS = sys.argv[:1], sys.argv[1:]  # dtype_rules reads sys.argv
import dtype_rules as D  # noqa: E402 - entry(): a one-device shard_map exported, JAX's outputs

import numpy as np  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
from jax import lax  # noqa: E402


def ulp_key(a):
    i = np.asarray(a, np.float32).ravel().view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def systems(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4, n, n)).astype(np.float32)
    spd = (x @ x.transpose(0, 2, 1) + n * np.eye(n)).astype(np.float32)
    low = (np.tril(x) + 3 * np.eye(n)).astype(np.float32)
    b = rng.standard_normal((4, n, 3)).astype(np.float32)
    return x, spd, low, b


def rows(n, seed):
    x, spd, low, b = systems(n, seed)
    return [
        ("triangular_solve", lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True,
                                                                       lower=True), (low, b)),
        ("triangular_solve^T right", lambda a, b: lax.linalg.triangular_solve(
            a, jnp.swapaxes(b, 1, 2), left_side=False, lower=True, transpose_a=True), (low, b)),
        ("cholesky", jnp.linalg.cholesky, (spd,)),
        ("cho_solve", lambda a, b: jax_cho_solve(a, b), (spd, b)),
        ("lu (factors)", lambda a: lax.linalg.lu(a)[0], (x,)),
        ("lu (pivots)", lambda a: lax.linalg.lu(a)[1], (x,)),
        ("lu (permutation)", lambda a: lax.linalg.lu(a)[2], (x,)),
        ("solve (lu + custom_linear_solve)", jnp.linalg.solve, (x, b)),
        ("inv", jnp.linalg.inv, (x,)),
    ]


def jax_cho_solve(a, b):
    import jax
    c = jnp.linalg.cholesky(a)
    return jax.vmap(lambda c, r: jsl.cho_solve((c, True), r))(c, b)


def main():
    meshrun = os.path.join(ROOT, "build/release/meshrun")
    if "--meshrun" in _ARGS:
        meshrun = _ARGS[_ARGS.index("--meshrun") + 1]
    print(f"{'primitive':34s} {'n':>3s} {'differ':>9s} {'max ulp':>8s} {'normwise':>9s}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (2, 3, 4, 8, 16, 32):
            for name, fn, args in rows(n, 4900 + n):
                prog, case = D.entry("ulps", fn, args)
                p, c = os.path.join(tmp, "p.json"), os.path.join(tmp, "c.json")
                open(p, "w").write(prog)
                open(c, "w").write(case)
                out = os.path.join(tmp, "out")
                r = subprocess.run([meshrun, "run", "--save-npy", out, p, c],
                                   capture_output=True, text=True)
                if r.returncode not in (0, 1):
                    print(f"{name:34s} {n:3d} meshrun exit {r.returncode}: {r.stderr.strip()}")
                    continue
                got = np.load(os.path.join(out, "out.npy")).astype(np.float32)
                want = np.asarray(fn(*args), np.float32).reshape(got.shape)
                u = np.abs(ulp_key(got) - ulp_key(want))
                norm = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
                print(f"{name:34s} {n:3d} {int((u > 0).sum()):4d}/{u.size:<4d} {int(u.max()):8d} "
                      f"{norm:9.1e}")


if __name__ == "__main__":
    main()
