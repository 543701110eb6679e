"""Writes the example cases of matmul-2d (cases/*.json), their expected values computed by
live JAX running reference.py:

    PYTHONPATH=python /work/jax-venv/bin/python cases/exercises/matmul-2d/make_cases.py
"""
import json
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import reference  # noqa: E402


def shortest(v):
    """A float32 as its shortest round-trip decimal (what meshrun --exact prints)."""
    return float(np.format_float_positional(np.float32(v), unique=True, trim="-")) \
        if np.isfinite(v) else None


def nested(a):
    return [[shortest(v) for v in row] for row in np.asarray(a, np.float32)]


CASES = [
    ("example1", "B=2, D=3, H=4: one row and one column per device", 2, 3, 4, 0, False),
    ("example2", "B=4, D=2, H=8: two of each", 4, 2, 8, 1, False),
    ("example3", "B=8, D=5, H=16", 8, 5, 16, 2, False),
    ("example4", "B=16, D=4, H=8: integers, exact in float32", 16, 4, 8, 3, True),
    ("example5", "B=6, D=21, H=20: three rows and five columns per device, a contraction of 21 "
     "(odd and past 16: a product tiled along it meets a last, shorter tile)", 6, 21, 20, 4, False),
]


def main():
    f = reference.make(2, 4)
    for name, desc, b, d, h, seed, integers in CASES:
        rng = np.random.default_rng(seed)
        draw = ((lambda s: rng.integers(-9, 10, size=s)) if integers
                else (lambda s: np.round(rng.uniform(-2, 2, size=s), 2)))
        x, w = draw((b, d)).astype(np.float32), draw((d, h)).astype(np.float32)
        out = np.asarray(f(x, w))
        case = {"problem": "matmul-2d", "name": name, "description": desc,
                "input": {"x": nested(x), "w": nested(w)}, "expected": {"out": nested(out)}}
        with open(os.path.join(HERE, "cases", name + ".json"), "w") as fh:
            fh.write(json.dumps(case, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
