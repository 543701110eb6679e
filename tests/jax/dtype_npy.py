"""Regenerates tests/jax/dtype_npy/ (issue #49, dtypes2): .npy inputs in the narrow dtypes, as
np.save writes them (float16 '<f2', bfloat16 '<V2' from ml_dtypes, int8 '|i1', uint8 '|u1', int16
'<i2', uint16 '<u2'). Each NAME.case.json is tests/jax/dtype_rules/NAME.case.json (its program is
tests/jax/dtype_rules/NAME.json) with input x read from NAME.x.npy; JAX's outputs are the same.
NAME.case.json whose description starts "refusal: " holds a value its program's dtype does not
(exit 2, the message's part after it). tests/jax/dtype_rules_cli_test.cpp runs them.

    build/jax-venv/bin/python tests/jax/dtype_npy.py
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import dtype_rules as D  # noqa: E402


def main():
    out = os.path.join(HERE, "dtype_npy")
    os.makedirs(out, exist_ok=True)
    rules = os.path.join(HERE, "dtype_rules")
    for d in D.NARROW:
        name = f"add-{d}"
        with open(os.path.join(rules, name + ".case.json")) as f:
            case = json.load(f)
        np.save(os.path.join(out, name + ".x.npy"), D.X[d][0])
        case["input"]["x"] = {"npy": name + ".x.npy"}
        case["description"] += "; input x from a .npy of " + np.dtype(D._NP[d]).str
        with open(os.path.join(out, name + ".case.json"), "w") as f:
            f.write(json.dumps(case) + "\n")
    # int8's -1 into a uint8 input: not a value of it
    with open(os.path.join(rules, "add-u8.case.json")) as f:
        case = json.load(f)
    np.save(os.path.join(out, "add-u8-refused.x.npy"), np.array([-1] + [1] * 7, np.int8))
    case["input"]["x"] = {"npy": "add-u8-refused.x.npy"}
    case["description"] = "refusal: input.x[0]: -1 is not a value of uint8"
    with open(os.path.join(out, "add-u8-refused.case.json"), "w") as f:
        f.write(json.dumps(case) + "\n")
    print(f"wrote {len(D.NARROW) + 1} cases to {out}")


if __name__ == "__main__":
    main()
