"""Writes the example cases of ring-allreduce (cases/*.json), their expected values computed by
live JAX running reference.py:

    PYTHONPATH=python /work/jax-venv/bin/python cases/exercises/ring-allreduce/make_cases.py
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
    ("example1", "N=8, D=2: one row per device", 8, 2, 0, False),
    ("example2", "N=16, D=3: two rows per device", 16, 3, 1, False),
    ("example3", "N=64, D=4: eight rows per device (a chunk per device for a reduce-scatter)",
     64, 4, 2, False),
    ("example4", "N=128, D=2: integers, sums exact in float32", 128, 2, 3, True),
    ("example5", "N=168, D=3: 21 rows per device (odd and past 16: a ring that moves its block "
     "in chunks meets a last, shorter one)", 168, 3, 4, False),
]


def main():
    f = reference.make(8)
    for name, desc, n, d, seed, integers in CASES:
        rng = np.random.default_rng(seed)
        x = (rng.integers(-20, 21, size=(n, d)) if integers
             else np.round(rng.uniform(-2, 2, size=(n, d)), 2)).astype(np.float32)
        out = np.asarray(f(x))
        case = {"problem": "ring-allreduce", "name": name, "description": desc,
                "input": {"x": nested(x)}, "expected": {"out": nested(out)}}
        with open(os.path.join(HERE, "cases", name + ".json"), "w") as fh:
            fh.write(json.dumps(case, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
