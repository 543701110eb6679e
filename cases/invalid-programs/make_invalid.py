"""Writes the hostile program files of this folder (run once; the files are committed). Each
NAME.json has a NAME.expect: line 1 the arguments ({} = the file), line 2 the exit code, line 3
the exact stderr line (tests/cli/program_file_test.cpp)."""
import copy
import json

# A valid program: out = x * 2 on a mesh of 8, x split by rows over 'data'.
BASE = {
    "format": "meshrun-program", "version": 1, "name": "double",
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
    "outputs": [{"name": "y"}],
    "exports": [{
        "mesh": [["data", 8]], "dims": ["M"],
        "jaxpr": {
            "invars": [{"id": 0, "type": {"dtype": "f32", "shape": ["8*M"]}}],
            "eqns": [{
                "primitive": "shard_map",
                "params": {"mesh": [["data", 8]], "in_specs": [["data"]], "out_specs": [["data"]],
                           "check_vma": True,
                           "jaxpr": {
                               "invars": [{"id": 0, "type": {"dtype": "f32", "shape": ["M"]}}],
                               "eqns": [{"primitive": "mul", "params": {},
                                         "in": [{"var": 0}, {"lit": 2.0, "dtype": "f32"}],
                                         "out": [{"id": 1, "type": {"dtype": "f32", "shape": ["M"]}}]}],
                               "outvars": [{"var": 1}]}},
                "in": [{"var": 0}],
                "out": [{"id": 1, "type": {"dtype": "f32", "shape": ["8*M"]}}]}],
            "outvars": [{"var": 1}]}}],
}


def body(p):
    return p["exports"][0]["jaxpr"]["eqns"][0]["params"]["jaxpr"]


def variant(name, change):
    p = copy.deepcopy(BASE)
    change(p)
    with open(name + ".json", "w") as f:
        json.dump(p, f)
        f.write("\n")


def setk(path, value):
    def change(p):
        node = p
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return change


variant("version-2", setk(["version"], 2))
variant("not-a-program", setk(["format"], "meshrun-case"))
variant("unknown-primitive", lambda p: body(p)["eqns"][0].update(primitive="igamma"))
variant("unknown-dtype", setk(["inputs", 0, "dtype"], "f64"))
variant("operand-types-disagree",
        lambda p: body(p)["eqns"][0].update(**{"in": [{"var": 0}, {"var": 0}, {"var": 0}]}))
variant("declared-type-wrong",
        lambda p: body(p)["eqns"][0]["out"][0]["type"].update(shape=["2*M"]))
variant("dim-cannot-be-solved", lambda p: p["exports"][0].update(dims=["M", "Q"]))
variant("spec-names-missing-axis",
        lambda p: p["exports"][0]["jaxpr"]["eqns"][0]["params"].update(in_specs=[["model"]]))
variant("shape-10-15-elements",
        lambda p: p["exports"][0]["jaxpr"]["invars"][0]["type"].update(shape=[1000000000, 1000000]))
variant("var-used-before-defined",
        lambda p: body(p)["eqns"][0].update(**{"in": [{"var": 7}, {"lit": 2.0, "dtype": "f32"}]}))
variant("var-defined-twice", lambda p: body(p)["eqns"][0]["out"][0].update(id=0))
variant("unknown-exercise", setk(["exercise"], "pipeline"))
variant("duplicate-input",
        lambda p: p.update(inputs=[p["inputs"][0], dict(p["inputs"][0])]))
variant("bad-dim-expression",
        lambda p: p["exports"][0]["jaxpr"]["invars"][0]["type"].update(shape=["8*+M"]))
variant("no-exports", setk(["exports"], []))
variant("literal-not-a-number",
        lambda p: body(p)["eqns"][0]["in"][1].update(lit="two"))


def const_short(p):
    b = body(p)
    b["constvars"] = [{"id": 5, "type": {"dtype": "f32", "shape": [2, 3]}}]
    b["consts"] = [{"dtype": "f32", "shape": [2, 3], "data": [1, 2, 3, 4, 5]}]


variant("constant-shorter-than-shape", const_short)


def shapes_disagree(p):
    b = body(p)
    b["constvars"] = [{"id": 5, "type": {"dtype": "f32", "shape": [3]}}]
    b["consts"] = [{"dtype": "f32", "shape": [3], "data": [1, 2, 3]}]
    b["eqns"][0].update(primitive="add", **{"in": [{"var": 0}, {"var": 5}]})


variant("operand-shapes-disagree", shapes_disagree)
variant("operand-dtypes-disagree",
        lambda p: body(p)["eqns"][0]["in"][1].update(dtype="i32", lit=2))


def nested_jits(p):
    inner = body(p)
    for _ in range(100):
        inner = {"invars": [{"id": 0, "type": {"dtype": "f32", "shape": ["M"]}}],
                 "eqns": [{"primitive": "jit", "params": {"name": "f", "jaxpr": inner},
                           "in": [{"var": 0}],
                           "out": [{"id": 1, "type": {"dtype": "f32", "shape": ["M"]}}]}],
                 "outvars": [{"var": 1}]}
    p["exports"][0]["jaxpr"]["eqns"][0]["params"]["jaxpr"] = inner


variant("jaxprs-nested-100-deep", nested_jits)


def forgot_psum(p):
    # Each device sums its own rows and returns the partial sum as if replicated: JAX's
    # check_vma refuses this at trace time; meshrun finds the copies differ.
    shard = p["exports"][0]["jaxpr"]["eqns"][0]
    b = shard["params"]["jaxpr"]
    b["eqns"][0].update(primitive="reduce_sum", params={"axes": [0]}, **{"in": [{"var": 0}]})
    b["eqns"][0]["out"][0]["type"]["shape"] = []
    shard["params"]["out_specs"] = [[]]
    shard["out"][0]["type"]["shape"] = []


variant("replicated-output-differs", forgot_psum)


def rank9_input(p):
    # A case holds arrays of up to 8 dimensions, as many as any shape of the file may have: an
    # input of 9 is refused where the file says so. (Rank 3 was refused before issue 48.4.)
    more = ["A", "B", "C", "D", "E", "F", "G", "H"]
    p["inputs"][0]["shape"] = ["N"] + more
    p["exports"][0]["dims"] = ["M"] + more
    p["exports"][0]["jaxpr"]["invars"][0]["type"]["shape"] = ["8*M"] + more


variant("input-rank-9", rank9_input)

with open("number-beyond-double.json", "w") as f:
    f.write(json.dumps(BASE).replace('"lit": 2.0', '"lit": 1e400'))

with open("nesting-100000-deep.json", "w") as f:
    f.write('{"format": "meshrun-program", "version": 1, "name": "deep", "inputs": '
            + "[" * 100000 + "]" * 100000 + "}\n")
with open("truncated.json", "w") as f:
    f.write(json.dumps(BASE)[:200])

# A key given twice: refused (nlohmann would keep the last value silently), with its object.
with open("duplicate-key.json", "w") as f:
    f.write(json.dumps(BASE).replace('"primitive": "mul",', '"primitive": "mul", "primitive": "add",', 1) + "\n")
# Names become file names (--save-npy DIR/NAME.npy): "../x" would write outside DIR.
variant("output-name-a-path", setk(["outputs", 0, "name"], "../y"))


def bool_input(p):
    # x is bool; the case's x holds 1, 2, ...: refused at x[1], never run as a "bool" 2.
    p["inputs"][0]["dtype"] = "bool"
    p["exports"][0]["jaxpr"]["invars"][0]["type"]["dtype"] = "bool"
    b = body(p)
    b["invars"][0]["type"]["dtype"] = "bool"
    b["eqns"] = [{"primitive": "convert_element_type", "params": {"new_dtype": "f32"},
                  "in": [{"var": 0}], "out": [{"id": 1, "type": {"dtype": "f32", "shape": ["M"]}}]}]


variant("bool-input-given-2", bool_input)

def after(primitive, params, shape):
    # One more equation on the shard_map's result, outside it: the program's output.
    def change(p):
        top = p["exports"][0]["jaxpr"]
        top["eqns"].append({"primitive": primitive, "params": params, "in": [{"var": 1}],
                            "out": [{"id": 2, "type": {"dtype": "f32", "shape": shape}}]})
        top["outvars"] = [{"var": 2}]
    return change


# Results have at most 8 dimensions, as every shape of the file (rank 3 to 8 are written as
# nested lists since issue 48.4), with elements (an empty one printed as '{"y":}' with exit 0
# before).
variant("output-rank-9", after("broadcast_in_dim",
                               {"shape": [1] * 8 + ["8*M"], "broadcast_dimensions": [8]},
                               [1] * 8 + ["8*M"]))
variant("output-with-no-elements", after("slice", {"start_indices": [0], "limit_indices": [0],
                                                   "strides": None}, [0]))

# The valid program they all break, and a case for it (16 rows: 2 per device).
import os
os.makedirs("valid", exist_ok=True)
with open("valid/double.json", "w") as f:
    json.dump(BASE, f)
    f.write("\n")
with open("valid/double-case.json", "w") as f:
    f.write('{"problem": "double", "name": "x times 2", "input": {"x": [1, 2, 3, 4, 5, 6, 7, 8, '
            '9, 10, 11, 12, 13, 14, 15, 16]}, "expected": {"y": [2, 4, 6, 8, 10, 12, 14, 16, 18, '
            '20, 22, 24, 26, 28, 30, 32]}}\n')
# The bare input (no expected): for the files whose fault shows only once the program runs.
with open("valid/double-input.json", "w") as f:
    f.write('{"x": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}\n')

# Issue #31. Integers are read whole and range-checked before they are narrowed: a shard_map's
# mesh size of 2^32 + 8 read as an int was 8 (and ran, exit 0).
variant("shard-map-mesh-2-32-plus-8",
        lambda p: p["exports"][0]["jaxpr"]["eqns"][0]["params"].update(mesh=[["data", 2**32 + 8]]))
variant("var-id-2-64-minus-1", lambda p: body(p)["eqns"][0]["out"][0].update(id=2**64 - 1))
variant("dim-negative", lambda p: p["exports"][0]["jaxpr"]["invars"][0]["type"].update(shape=[-8]))
# The file against itself: `inputs` says what a case must hold, the jaxpr what the run takes.
variant("input-dtype-disagrees", setk(["inputs", 0, "dtype"], "i32"))
variant("input-rank-disagrees", setk(["inputs", 0, "shape"], ["N", "K"]))


def constant_sizes(p):
    # Every size a number (24 rows, 3 per device), and `inputs` saying 16.
    p["inputs"][0]["shape"] = [16]
    p["exports"][0]["dims"] = []
    p["exports"][0]["jaxpr"]["invars"][0]["type"]["shape"] = [24]
    p["exports"][0]["jaxpr"]["eqns"][0]["out"][0]["type"]["shape"] = [24]
    body(p)["invars"][0]["type"]["shape"] = [3]
    body(p)["eqns"][0]["out"][0]["type"]["shape"] = [3]


variant("input-size-disagrees", constant_sizes)
# Terminal injection: no byte of the file reaches the terminal raw. Strings shown as they are
# (the program's name, axis names, params) may hold no control byte; the rest is escaped.
FAKE = "\x1b[2K\r\x1b[32mall cases PASS\x1b[0m"
variant("name-holds-esc", setk(["name"], "double" + FAKE))
# A C1 control in UTF-8 (U+009B is CSI: a terminal's ESC [) is a control byte too.
variant("name-holds-c1-csi", setk(["name"], "double\u009b2J\u009b32mall cases PASS"))
variant("dtype-holds-c1-csi", lambda p: p["inputs"][0].update(dtype="f32\u009b2J"))
# check_vma "false" (a string) was read as the default true: the run changed without a word.
variant("check-vma-a-string",
        lambda p: p["exports"][0]["jaxpr"]["eqns"][0]["params"].update(check_vma="false"))
variant("axis-name-holds-esc", lambda p: p["exports"][0].update(mesh=[["da\x1bta", 8]]))
variant("param-holds-esc",
        lambda p: p["exports"][0]["jaxpr"]["eqns"][0]["params"].update(in_specs=[["da\x1bta"]]))
variant("source-holds-esc",
        lambda p: body(p)["eqns"][0].update(primitive="frob", source="f.py:1" + FAKE))
with open("key-holds-esc.json", "w") as f:
    f.write(json.dumps(BASE).replace('"primitive": "mul",',
                                     '"\\u001b[2J": 1, "\\u001b[2J": 2, "primitive": "mul",', 1)
            + "\n")
