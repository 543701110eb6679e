"""Regenerates tests/jax/dtype_refusals/ (issue #49, dtypes): programs of bf16, f16, i8 ... that
JAX 0.10.2 runs but meshrun cannot run as XLA:CPU does -- each exported from JAX, with a case, and
the one-line refusal meshrun must give (the case's description, "refusal: " and a part of its
message) with exit 2 before
anything runs. tests/jax/dtype_rules_cli_test.cpp runs them.

    build/jax-venv/bin/python tests/jax/dtype_refusals.py
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import dtype_rules as D  # noqa: E402

BF = np.arange(40, dtype=np.float32).astype(jnp.bfloat16)
K = np.array([0, 3, 1], np.int32)
# name -> (function, args, a part of meshrun's message)
REFUSED = {
    # an f16 sum over two axes longer than 32: XLA:CPU's f16 order there is not its
    # TreeReductionRewriter's as meshrun follows it (bf16's is; tests/jax/dtype_rules reduce_sum-*)
    "reduce_sum-f16-40x40": (lambda x: lax.reduce_sum(x, (0, 1)),
                             (np.full((40, 40), 0.5, np.float16),),
                             "over 2 axes of more than 32 elements"),
    # a primitive not in the table (lib/interp/ops/narrow_dtypes.cpp)
    # f16's expm1 is not XLA:CPU's f32 expm1 rounded once (bf16's is, and runs)
    "expm1-f16": (lambda x: lax.expm1(x), (BF[:8].astype(np.float16),),
                  "meshrun does not run expm1 on float16"),
    "reduce_window_sum-i8": (lambda x: lax.reduce_window(x, np.int8(0), lax.add, (3,), (1,), "VALID"),
                             (BF[:8].astype(np.int8),), "meshrun does not run reduce_window_sum on int8"),
    # reduce_window's generic form of an add on bf16 (its max and min run)
    "reduce_window-add-bf16": (lambda x: lax.reduce_window(x, np.array(1.5, x.dtype), lax.add, (3,),
                                                           (1,), "VALID"), (BF[:8],),
                               "meshrun does not run reduce_window of add on bfloat16"),
    # logistic's bf16 result converted to f32: XLA's fold of its last op not verified
    "logistic-bf16-to-f32": (lambda x: lax.logistic(x).astype(jnp.float32), (BF[:8],),
                             "excess precision"),
    # a bf16 result both converted to f32 (unrounded in XLA) and used as bf16 (rounded)
    "sub-bf16-mixed-use": (lambda x: (lambda s: s.astype(jnp.float32) + (s * x).astype(jnp.float32))(
        x - 1), (BF[:8],), "excess precision"),
    # ---- issue #49, uint32 and jax.random: what computes on uint32 outside ops/uint32.cpp
    "psum-u32": (lambda x: lax.psum(lax.bitcast_convert_type(x, jnp.uint32), "data")
                 .astype(jnp.float32), (D.U32X[:8],), "run psum_invariant on uint32"),
    # a cumulative sum of uint32 (its sort, reductions and arithmetic run: dtype_rules u32_*)
    "cumsum-u32": (lambda x: lax.cumsum(lax.bitcast_convert_type(x, jnp.uint32)).astype(
        jnp.float32), (D.U32X[:8],), "meshrun does not run cumsum on uint32"),
    # ---- int32 literals of 2^25 or more, held rounded (lib/interp/rounded_int32.cpp): what would
    # compute on the rounding. randint over int32's whole range compares 2^31 - 1 with itself
    "randint-i32-full": (lambda k: D.jax.random.randint(D.jax.random.key(k[0]), (8,), -2**31,
                                                        2**31 - 1), (K,), "cannot return it exactly"),
    # the add runs on the bits (lib/interp/int32_bits.cpp); its result, beyond 2^24, is returned
    "int32-max-add": (lambda k: k + jnp.iinfo(jnp.int32).max, (K,), "cannot return it exactly"),
    # ---- an int32 beyond 2^24 held as its bits (lib/interp/int32_bits.cpp): what does not take it
    "i32-bits-cumsum": (lambda x: (lax.cumsum(lax.bitcast_convert_type(x, jnp.int32)) > 0).astype(
        jnp.float32), (D.BITS_F,), "reaches cumsum"),
    "i32-bits-output": (lambda x: lax.bitcast_convert_type(x, jnp.int32), (D.BITS_F,),
                        "cannot return it exactly"),
    # a loop's carry: control flow takes int32's values, rounded beyond 2^25, which the shift in
    # its body refuses
    "i32-bits-loop": (lambda x: (lax.fori_loop(0, 3, lambda i, b: b ^ (b >> 1),
                                               lax.bitcast_convert_type(x, jnp.int32)) > 0).astype(
        jnp.float32), (D.BITS_F,), "reaches shift_right_arithmetic"),
    "i32-bits-div": (lambda x: (lax.bitcast_convert_type(x, jnp.int32) // 3 > 0).astype(
        jnp.float32), (D.BITS_F,), "reaches div"),
    "int32-max-output": (lambda k: jnp.where(k > 0, k, jnp.iinfo(jnp.int32).max), (K,),
                         "cannot return it exactly"),
    "int32-max-to-u32": (lambda k: jnp.maximum(k, jnp.iinfo(jnp.int32).max).astype(jnp.uint32)
                         .astype(jnp.float32), (K,), "converted to uint32"),
}


def main():
    out = os.path.join(HERE, "dtype_refusals")
    os.makedirs(out, exist_ok=True)
    for name, (fn, args, refusal) in REFUSED.items():
        prog, case = D.entry(name, fn, args)
        case = json.loads(case)
        case["description"] = "refusal: " + refusal
        with open(os.path.join(out, name + ".json"), "w") as f:
            f.write(prog if prog.endswith("\n") else prog + "\n")
        with open(os.path.join(out, name + ".case.json"), "w") as f:
            f.write(json.dumps(case) + "\n")
    # Inputs no case may hold: a bf16 input of 0.1 (not a bf16 value), an i8 of 300.
    prog, case = D.entry("case-values", lambda x, y: (x, y)[0], (BF[:2], np.array([1, 2], np.int8)))
    for tag, inp, refusal in [("bf16", {"x": [0.1, 1.0], "y": [1, 2]}, "input.x[0]"),
                              ("i8", {"x": [0.5, 1.0], "y": [1, 300]}, "input.y[1]")]:
        c = json.loads(case)
        c["input"] = inp
        c["description"] = "refusal: " + refusal
        with open(os.path.join(out, f"case-values-{tag}.json"), "w") as f:
            f.write(prog if prog.endswith("\n") else prog + "\n")
        with open(os.path.join(out, f"case-values-{tag}.case.json"), "w") as f:
            f.write(json.dumps(c) + "\n")
    print(f"wrote {len(REFUSED) + 2} refusals to {out}")


if __name__ == "__main__":
    main()
