"""Writes the hostile program files of this folder whose fault is in what their equations would
compute rather than in how the file is written (issue #31, classes 3-5): shape arithmetic that
wraps int64, compute beyond the cost budget. Run once from this folder; the files are committed.
Each NAME.json has a NAME.expect as make_invalid.py's do (tests/cli/program_file_test.cpp)."""
import copy
import json

with open("valid/double.json") as f:
    BASE = json.load(f)


def top_after(eqns, out_type):
    """The valid program with `eqns` after its shard_map (whose result is var 1, f32[16] on the
    16-row case) and the last one's result (var 1 + len(eqns)) as the program's output."""
    p = copy.deepcopy(BASE)
    top = p["exports"][0]["jaxpr"]
    top["eqns"].extend(eqns)
    last = 1 + len(eqns)
    top["eqns"][-1]["out"] = [{"id": last, "type": out_type}]
    top["outvars"] = [{"var": last}]
    return p


def eqn(primitive, params, ins, out_id, dtype, shape):
    return {"primitive": primitive, "params": params, "in": ins,
            "out": [{"id": out_id, "type": {"dtype": dtype, "shape": shape}}]}


def write(name, program, args, code, line):
    with open(name + ".json", "w") as f:
        json.dump(program, f)
        f.write("\n")
    with open(name + ".expect", "w") as f:
        f.write(args + "\n" + str(code) + "\n" + line + "\n")


CASE = "cases/invalid-programs/valid/double-case.json"
INPUT = "cases/invalid-programs/valid/double-input.json"  # no expected: a wrong result is exit 0
HERE = "cases/invalid-programs/"

# Class 4: pad of a 2^24 + 1 element vector with interior 2^40: (2^24) * 2^40 = 2^64 wraps int64
# to 0, so lo = -(2^24 - 1) made it an f32[2] that ran and printed {"y":[0.0,0.0]} (exit 0) on
# be40e9a.
n = 2**24 + 1
write("pad-interior-wraps-int64",
      top_after([eqn("reduce_sum", {"axes": [0]}, [{"var": 1}], 2, "f32", []),
                 eqn("broadcast_in_dim", {"shape": [n], "broadcast_dimensions": []},
                     [{"var": 2}], 3, "f32", [n]),
                 eqn("pad", {"padding_config": [[-(2**24 - 1), 0, 2**40]]},
                     [{"var": 3}, {"lit": 0.0, "dtype": "f32"}], 4, "f32", [2])],
                {"dtype": "f32", "shape": [2]}),
      "run {} " + INPUT, 2,
      "meshrun: " + HERE + "pad-interior-wraps-int64.json: exports[0].jaxpr.eqns[3] (pad): pad: "
      "the size of dimension 0 after padding overflows int64 (16777216 * 1099511627776)")

# Class 3: 24 dot_generals of f32[4096,4096] chained (3.3e12 flops) passed every element budget
# on be40e9a and ran for minutes; refused before anything runs at the one that brings the program
# beyond the default budget of 2^38 flops (the second: 2 x 2^37, plus the 2^24 + 40 of the
# equations before).
k = 4096
eqns = [eqn("reduce_sum", {"axes": [0]}, [{"var": 1}], 2, "f32", []),
        eqn("broadcast_in_dim", {"shape": [k, k], "broadcast_dimensions": []},
            [{"var": 2}], 3, "f32", [k, k])]
for i in range(24):
    eqns.append(eqn("dot_general", {"contracting": [[1], [0]], "batch": [[], []]},
                    [{"var": 3 + i}, {"var": 3}], 4 + i, "f32", [k, k]))
eqns.append(eqn("reduce_sum", {"axes": [0, 1]}, [{"var": 27}], 28, "f32", []))
write("dot-generals-3-tflop", top_after(eqns, {"dtype": "f32", "shape": []}),
      "run {} " + INPUT, 2,
      "meshrun: " + HERE + "dot-generals-3-tflop.json: exports[0].jaxpr.eqns[4] (dot_general): "
      "dot_general of f32[4096,4096], f32[4096,4096] -> f32[4096,4096] on 1 device brings the "
      "program to 274894684200 flops, beyond the budget of 274877906944 (--max-flops N raises it)")

# Class 3 again: 29 erf_invs chained on f32[2^27] (the sum of x times 0.001, broadcast) counted
# one flop an element, 3.9e9 in all, within the budget, and ran for 47 s of CPU (13 ns an
# element); an element of erf_inv now counts 1400 flops (interp/cost.cpp), so the second is
# refused before anything runs.
n = 2**27
eqns = [eqn("reduce_sum", {"axes": [0]}, [{"var": 1}], 2, "f32", []),
        eqn("mul", {}, [{"var": 2}, {"lit": 0.001, "dtype": "f32"}], 3, "f32", []),
        eqn("broadcast_in_dim", {"shape": [n], "broadcast_dimensions": []},
            [{"var": 3}], 4, "f32", [n])]
for i in range(29):
    eqns.append(eqn("erf_inv", {}, [{"var": 4 + i}], 5 + i, "f32", [n]))
eqns.append(eqn("reduce_sum", {"axes": [0]}, [{"var": 33}], 34, "f32", []))
write("erf-invs-47-seconds", top_after(eqns, {"dtype": "f32", "shape": []}),
      "run {} " + INPUT, 2,
      "meshrun: " + HERE + "erf-invs-47-seconds.json: exports[0].jaxpr.eqns[5] (erf_inv): "
      "erf_inv of f32[134217728] -> f32[134217728] on 1 device brings the program to "
      "375943856170 flops, beyond the budget of 274877906944 (--max-flops N raises it)")
