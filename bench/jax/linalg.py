"""meshrun's linear algebra (lib/interp/ops/linalg.cpp) beside JAX 0.10.2 on CPU: lu, cholesky
and triangular_solve (128 right-hand sides) of a batch of B matrices of n x n, each exported as a
one-device shard_map program and run by `meshrun run --timings` (its compute_s: the evaluation,
not reading the case), JAX's the best of 5 jitted runs in process CPU time (all its threads).
Prints ns a multiply-add (lu and cholesky n^3 / 3, triangular_solve n^2 / 2 a right-hand side):
the figure the compute budget prices (300 flops, 3 ns, docs/program-format.md).

    build/jax-venv/bin/python bench/jax/linalg.py [--meshrun build/release/meshrun]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import jax  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

from meshrun_export import dumps, export  # noqa: E402

MESHRUN = os.path.join(ROOT, "build/release/meshrun")
if "--meshrun" in sys.argv:
    MESHRUN = sys.argv[sys.argv.index("--meshrun") + 1]


def jax_time(f, args):
    jax.block_until_ready(f(*args))
    best = 1e9
    for _ in range(5):
        t = time.process_time()
        jax.block_until_ready(f(*args))
        best = min(best, time.process_time() - t)
    return best


def meshrun_time(f, args, tmp):
    names = ["x", "y"][:len(args)]
    prog = export(f, *args, names=names, outputs=["out"], name="bench", mesh=[["data", 1]])
    p, c = os.path.join(tmp, "p.json"), os.path.join(tmp, "c.json")
    with open(p, "w") as fh:
        fh.write(dumps(prog))
    with open(c, "w") as fh:
        json.dump({"mesh": {"data": 1}, "input": {k: v.tolist() for k, v in zip(names, args)}}, fh)
    r = subprocess.run([MESHRUN, "run", "--timings", "--repeat", "3", p, c],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stderr.strip().splitlines()[-1])["compute_s"]


def main():
    mesh = Mesh(np.array(jax.devices()[:1]), ("data",))
    rng = np.random.default_rng(49)
    with tempfile.TemporaryDirectory() as tmp:
        for n, batch in [(16, 512), (128, 32)]:
            x = rng.standard_normal((batch, n, n)).astype(np.float32)
            spd = (x @ x.transpose(0, 2, 1) + n * np.eye(n)).astype(np.float32)
            low = np.tril(spd)
            b = rng.standard_normal((batch, n, 128)).astype(np.float32)
            for name, fn, args, mas in [
                    ("lu", lambda a: lax.linalg.lu(a)[0], (x,), n ** 3 / 3),
                    ("cholesky", lax.linalg.cholesky, (spd,), n ** 3 / 3),
                    ("triangular_solve", lambda a, r: lax.linalg.triangular_solve(
                        a, r, left_side=True, lower=True), (low, b), n * n / 2 * 128)]:
                f = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=tuple(P() for _ in args),
                                          out_specs=P()))
                tj, tm = jax_time(f, args), meshrun_time(f, args, tmp)
                total = mas * batch
                print(f"{batch} x {n}x{n} {name:16s} JAX {tj * 1e3:8.2f} ms "
                      f"{tj * 1e9 / total:6.2f} ns/MA   meshrun {tm * 1e3:8.2f} ms "
                      f"{tm * 1e9 / total:6.2f} ns/MA")


if __name__ == "__main__":
    main()
