"""How meshrun's numbers are compared with JAX's, once for every script (bench/jax/oracle.py,
gallery.py, program_bits.py, orders.py; tests/jax/programs/make_cases.py, tests/jax/dtype_rules.py):

  bit_identical(got, want)   the same float32 bits, -0.0 and 0.0 counted as the same (what every
                             "bit-identical" share in docs/jax.md and bench/jax counts);
  within(got, want)          |got - want| <= TOL + TOL |want|, meshrun's default grading tolerance;
  tolerance_share(got, want) |got - want| as a share of that tolerance (1.0: at its edge);
  ulps(got, want)            float32 steps between the two;
  normwise_apart(old, new)   how far two case texts' expected values are apart (regenerating with
                             JAX on another CPU model moves last bits, MAX_NORMWISE accepts that).
"""
import json

import numpy as np

TOL = 1e-5


def _f32(a):
    return np.asarray(a, dtype=np.float64).astype(np.float32)


def bit_identical(got, want):
    g, w = _f32(got), _f32(want)
    return (g.view(np.int32) == w.view(np.int32)) | ((g == 0) & (w == 0))


def tolerance_share(got, want, atol=TOL, rtol=TOL):
    g, w = _f32(got).astype(np.float64), _f32(want).astype(np.float64)
    return np.abs(g - w) / (atol + rtol * np.abs(w))


def within(got, want, atol=TOL, rtol=TOL):
    return tolerance_share(got, want, atol, rtol) <= 1.0


def _ordered(a):
    i = _f32(a).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def ulps(got, want):
    return np.abs(_ordered(got) - _ordered(want))

# XLA:CPU compiles for the CPU it runs on: the same jit gives other last bits on AVX-512 than on
# AVX2 (seen 2026-12-02: the mlp-block cases, made on an AMD EPYC, off by up to 205 ulps on an
# Intel Xeon, in elements near 0 of arrays of larger ones). --check accepts a case whose inputs
# are identical and each of whose expected arrays is within MAX_NORMWISE of the committed one,
# relative to the array's largest magnitude: rounding, not a changed program. Anything else,
# and any change to a program file, is stale.
MAX_NORMWISE = 1e-6


def normwise_apart(old_text, new_text):
    """The largest max|a - b| / max|a| over two case texts' `expected` arrays, or None when the
    cases differ otherwise (inputs, names, shapes) or are not cases."""
    try:
        a, b = json.loads(old_text), json.loads(new_text)
    except ValueError:
        return None
    if not (isinstance(a, dict) and isinstance(b, dict) and "expected" in a and "expected" in b):
        return None
    rest = [{k: v for k, v in c.items() if k != "expected"} for c in (a, b)]
    if rest[0] != rest[1] or a["expected"].keys() != b["expected"].keys():
        return None
    worst = 0.0
    for k in a["expected"]:
        x = np.asarray(a["expected"][k], dtype=np.float64)
        y = np.asarray(b["expected"][k], dtype=np.float64)
        if x.shape != y.shape:
            return None
        if x.size:
            scale = max(float(np.max(np.abs(x))), 1e-30)
            worst = max(worst, float(np.max(np.abs(x - y))) / scale)
    return worst
