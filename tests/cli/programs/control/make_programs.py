"""Writes the hand-made control-flow program files of this folder (scan, while, cond inside and
outside shard_map bodies, and the hostile ones) and their cases, whose `expected` numpy computes
here in float32, step by step in the programs' own order -- a reference independent of meshrun.
Needs only Debian's python3-numpy (no JAX):

    /usr/bin/python3 tests/cli/programs/control/make_programs.py           # rewrite them
    /usr/bin/python3 tests/cli/programs/control/make_programs.py --check   # exit 1 if one would change

tests/cli/control_flow_cli_test.cpp runs them. The same constructs exported from live JAX are in
tests/jax/corpus/.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
F32 = np.float32


class J:
    """A jaxpr under construction: vars numbered in order."""

    def __init__(self):
        self.types, self.invars, self.eqns, self.outvars = [], [], [], []

    def var(self, dtype, shape):
        self.types.append({"dtype": dtype, "shape": list(shape)})
        return len(self.types) - 1

    def arg(self, dtype, shape):
        v = self.var(dtype, shape)
        self.invars.append(v)
        return v

    def eqn(self, prim, ins, outs, **params):
        out_vars = [self.var(d, s) for d, s in outs]
        self.eqns.append({"primitive": prim, "params": params, "in": [atom(a) for a in ins],
                          "out": [{"id": v, "type": self.types[v]} for v in out_vars]})
        return out_vars if len(out_vars) != 1 else out_vars[0]

    def done(self, *outs):
        self.outvars = [atom(a) for a in outs]
        return {"invars": [{"id": v, "type": self.types[v]} for v in self.invars],
                "constvars": [], "consts": [], "eqns": self.eqns, "outvars": self.outvars}


def atom(a):
    if isinstance(a, int):
        return {"var": a}
    return a  # a literal dict


def lit(v, dtype="f32"):
    return {"lit": v, "dtype": dtype}


def program(name, inputs, outputs, mesh, jaxpr):
    return {"format": "meshrun-program", "version": 1, "name": name,
            "inputs": [{"name": n, "dtype": d, "shape": s} for n, d, s in inputs],
            "outputs": [{"name": n} for n in outputs],
            "exports": [{"mesh": mesh, "dims": [], "jaxpr": jaxpr}]}


def shard_map(top, ins, in_specs, out_specs, body, outs, mesh, check_vma=True):
    return top.eqn("shard_map", ins, outs, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                   check_vma=check_vma, jaxpr=body)


MESH = [["data", 8]]
ONE = [["data", 1]]  # a program of no shard_map: one device
RING = [[i, (i + 1) % 8] for i in range(8)]


def ring_scan(steps=7, name="ring-scan"):
    """A ring all-reduce as a scan of 7 steps in the body: acc += ppermute(buf) (with more steps,
    each block goes round more than once: the trace's folding of a loop's collectives)."""
    b = J()
    x = b.arg("f32", [1, 2])
    s = J()
    acc, buf = s.arg("f32", [1, 2]), s.arg("f32", [1, 2])
    nxt = s.eqn("ppermute", [buf], [("f32", [1, 2])], axes=["data"], perm=RING)
    acc2 = s.eqn("add", [acc, nxt], [("f32", [1, 2])])
    body = s.done(acc2, nxt)
    acc_out, _ = b.eqn("scan", [x, x], [("f32", [1, 2]), ("f32", [1, 2])], length=steps,
                       reverse=False, num_consts=0, num_carry=2, jaxpr=body)
    body_jx = b.done(acc_out)
    t = J()
    gx = t.arg("f32", [8, 2])
    y = shard_map(t, [gx], [["data"]], [["data"]], body_jx, [("f32", [8, 2])], MESH)
    prog = program(name, [("x", "f32", [8, 2])], ["y"], MESH, t.done(y))

    def ref(xv):
        out = np.zeros_like(xv)
        for d in range(8):
            acc = xv[d].copy()
            for k in range(1, steps + 1):
                acc = (acc + xv[(d - k) % 8]).astype(F32)
            out[d] = acc
        return {"y": out}
    return prog, ref, {"x": (8, 2)}


def while_double():
    """Each device doubles its block until its max passes 100: a different trip count on each
    device (a while with no collective), and the count returned."""
    b = J()
    x = b.arg("f32", [1, 3])
    c = J()
    cx, cn = c.arg("f32", [1, 3]), c.arg("i32", [])
    m = c.eqn("reduce_max", [cx], [("f32", [])], axes=[0, 1])
    p = c.eqn("lt", [m, lit(100.0)], [("bool", [])])
    cond = c.done(p)
    w = J()
    wx, wn = w.arg("f32", [1, 3]), w.arg("i32", [])
    wx2 = w.eqn("mul", [wx, lit(2.0)], [("f32", [1, 3])])
    wn2 = w.eqn("add", [wn, lit(1, "i32")], [("i32", [])])
    body = w.done(wx2, wn2)
    y, n = b.eqn("while", [x, lit(0, "i32")], [("f32", [1, 3]), ("i32", [])], cond_nconsts=0,
                 body_nconsts=0, cond_jaxpr=cond, body_jaxpr=body)
    n1 = b.eqn("broadcast_in_dim", [n], [("i32", [1])], shape=[1], broadcast_dimensions=[])
    body_jx = b.done(y, n1)
    t = J()
    gx = t.arg("f32", [8, 3])
    gy, gn = shard_map(t, [gx], [["data"]], [["data"], ["data"]], body_jx,
                       [("f32", [8, 3]), ("i32", [8])], MESH)
    prog = program("while-double", [("x", "f32", [8, 3])], ["y", "count"], MESH, t.done(gy, gn))

    def ref(xv):
        y = xv.copy()
        n = np.zeros(8, np.int32)
        for d in range(8):
            while y[d].max() < F32(100):
                y[d] = (y[d] * F32(2)).astype(F32)
                n[d] += 1
        return {"y": y, "count": n}
    return prog, ref, {"x": (8, 3)}


def cond_psum():
    """A cond whose index every device computes alike (from a psum), a different collective in
    each branch: pmean-like psum/8 in branch 0, psum then times 2 in branch 1."""
    b = J()
    x = b.arg("f32", [1, 2])
    tot = b.eqn("psum", [x], [("f32", [1, 2])], axes=["data"])
    s = b.eqn("reduce_sum", [tot], [("f32", [])], axes=[0, 1])
    pos = b.eqn("gt", [s, lit(0.0)], [("bool", [])])
    idx = b.eqn("convert_element_type", [pos], [("i32", [])], new_dtype="i32")
    b0 = J()
    a0 = b0.arg("f32", [1, 2])
    r0 = b0.eqn("psum", [a0], [("f32", [1, 2])], axes=["data"])
    r0b = b0.eqn("div", [r0, lit(8.0)], [("f32", [1, 2])])
    br0 = b0.done(r0b)
    b1 = J()
    a1 = b1.arg("f32", [1, 2])
    r1 = b1.eqn("mul", [a1, lit(2.0)], [("f32", [1, 2])])
    r1b = b1.eqn("psum", [r1], [("f32", [1, 2])], axes=["data"])
    br1 = b1.done(r1b)
    out = b.eqn("cond", [idx, x], [("f32", [1, 2])], branches=[br0, br1])
    body_jx = b.done(out)
    t = J()
    gx = t.arg("f32", [8, 2])
    y = shard_map(t, [gx], [["data"]], [[]], body_jx, [("f32", [1, 2])], MESH)
    prog = program("cond-psum", [("x", "f32", [8, 2])], ["y"], MESH, t.done(y))

    def fold(rows):
        acc = rows[0].copy()
        for r in rows[1:]:
            acc = (acc + r).astype(F32)
        return acc

    def ref(xv):
        tot = fold(list(xv))
        s = F32(0)
        for v in tot.reshape(-1):  # reduce_sum in order
            s = F32(s + v)
        if s > 0:
            y = fold([(r * F32(2)).astype(F32) for r in xv])
        else:
            y = (fold(list(xv)) / F32(8)).astype(F32)
        return {"y": y.reshape(1, 2)}
    return prog, ref, {"x": (8, 2)}


def scan_reverse():
    """Outside any shard_map: a reverse scan with a const, a carry, xs and ys,
    c = c * w + x_i, y_i = c (a discounted sum from the end), then a shard_map that doubles."""
    t = J()
    w, x0, xs = t.arg("f32", []), t.arg("f32", [4]), t.arg("f32", [5, 4])
    s = J()
    sw, sc, sx = s.arg("f32", []), s.arg("f32", [4]), s.arg("f32", [4])
    m = s.eqn("mul", [sc, sw], [("f32", [4])])
    c2 = s.eqn("add", [m, sx], [("f32", [4])])
    body = s.done(c2, c2)
    c, ys = t.eqn("scan", [w, x0, xs], [("f32", [4]), ("f32", [5, 4])], length=5, reverse=True,
                  num_consts=1, num_carry=1, jaxpr=body)
    b = J()
    bx = b.arg("f32", [5, 1])
    b2 = b.eqn("mul", [bx, lit(2.0)], [("f32", [5, 1])])
    bj = b.done(b2)
    mesh = [["data", 4]]
    ys2 = t.eqn("shard_map", [ys], [("f32", [5, 4])], mesh=mesh, in_specs=[[None, "data"]],
                out_specs=[[None, "data"]], check_vma=True, jaxpr=bj)
    prog = program("scan-reverse", [("w", "f32", []), ("x0", "f32", [4]), ("xs", "f32", [5, 4])],
                   ["c", "ys"], mesh, t.done(c, ys2))

    def ref(wv, x0v, xsv):
        c = x0v.copy()
        ys = np.zeros_like(xsv)
        for i in reversed(range(5)):
            # c * w + x contracted into one fused multiply-add, as XLA:CPU (and meshrun) do:
            # the product of two float32 is exact in float64, the sum rounded once to float32.
            c = (c.astype(np.float64) * np.float64(wv) + xsv[i].astype(np.float64)).astype(F32)
            ys[i] = c
        return {"c": c, "ys": (ys * F32(2)).astype(F32)}
    return prog, ref, {"w": (), "x0": (4,), "xs": (5, 4)}


def plain_while():
    """A plain jax.jit (no shard_map, exported with mesh []): a while that halves x until its
    sum is below 1, and the count."""
    t = J()
    x = t.arg("f32", [3])
    c = J()
    cx, cn = c.arg("f32", [3]), c.arg("i32", [])
    s = c.eqn("reduce_sum", [cx], [("f32", [])], axes=[0])
    p = c.eqn("ge", [s, lit(1.0)], [("bool", [])])
    cond = c.done(p)
    w = J()
    wx, wn = w.arg("f32", [3]), w.arg("i32", [])
    wx2 = w.eqn("mul", [wx, lit(0.5)], [("f32", [3])])
    wn2 = w.eqn("add", [wn, lit(1, "i32")], [("i32", [])])
    body = w.done(wx2, wn2)
    y, n = t.eqn("while", [x, lit(0, "i32")], [("f32", [3]), ("i32", [])], cond_nconsts=0,
                 body_nconsts=0, cond_jaxpr=cond, body_jaxpr=body)
    prog = program("plain-while", [("x", "f32", [3])], ["y", "count"], [], t.done(y, n))

    def ref(xv):
        y, n = xv.copy(), 0
        while F32(y[0] + y[1]) + y[2] >= F32(1):
            y = (y * F32(0.5)).astype(F32)
            n += 1
        return {"y": y, "count": np.int32(n)}
    return prog, ref, {"x": (3,)}


# -- hostile programs: each refused in one line (the test checks the line and the exit code)

def while_forever():
    t = J()
    x = t.arg("f32", [2])
    c = J()
    c.arg("f32", [2])
    cond = c.done(lit(True, "bool"))
    w = J()
    wx = w.arg("f32", [2])
    wx2 = w.eqn("add", [wx, lit(1.0)], [("f32", [2])])
    body = w.done(wx2)
    y = t.eqn("while", [x], [("f32", [2])], cond_nconsts=0, body_nconsts=0, cond_jaxpr=cond,
              body_jaxpr=body)
    return program("while-forever", [("x", "f32", [2])], ["y"], ONE, t.done(y))


def scan_huge():
    t = J()
    x = t.arg("f32", [2])
    s = J()
    sx = s.arg("f32", [2])
    sx2 = s.eqn("add", [sx, lit(1.0)], [("f32", [2])])
    body = s.done(sx2)
    y = t.eqn("scan", [x], [("f32", [2])], length=10 ** 9, reverse=False, num_consts=0,
              num_carry=1, jaxpr=body)
    return program("scan-huge", [("x", "f32", [2])], ["y"], ONE, t.done(y))


def cond_index():
    t = J()
    i, x = t.arg("i32", []), t.arg("f32", [2])
    branches = []
    for k in range(2):
        b = J()
        bx = b.arg("f32", [2])
        branches.append(b.done(b.eqn("mul", [bx, lit(float(k + 1))], [("f32", [2])])))
    y = t.eqn("cond", [i, x], [("f32", [2])], branches=branches)
    return program("cond-index", [("i", "i32", []), ("x", "f32", [2])], ["y"], ONE, t.done(y))


def carry_changes():
    t = J()
    x = t.arg("f32", [4])
    s = J()
    sx = s.arg("f32", [4])
    half = s.eqn("slice", [sx], [("f32", [2])], start_indices=[0], limit_indices=[2], strides=None)
    body = s.done(half)
    y = t.eqn("scan", [x], [("f32", [2])], length=3, reverse=False, num_consts=0, num_carry=1,
              jaxpr=body)
    return program("carry-changes", [("x", "f32", [4])], ["y"], ONE, t.done(y))


def diverging_cond():
    """Device 0 takes the branch with a psum, the others the branch without: never a hang."""
    b = J()
    x = b.arg("f32", [1, 2])
    d = b.eqn("axis_index", [], [("i32", [])], axes=["data"])
    z = b.eqn("eq", [d, lit(0, "i32")], [("bool", [])])
    idx = b.eqn("convert_element_type", [z], [("i32", [])], new_dtype="i32")
    b0 = J()
    a0 = b0.arg("f32", [1, 2])
    br0 = b0.done(b0.eqn("neg", [a0], [("f32", [1, 2])]))
    b1 = J()
    a1 = b1.arg("f32", [1, 2])
    br1 = b1.done(b1.eqn("psum", [a1], [("f32", [1, 2])], axes=["data"]))
    out = b.eqn("cond", [idx, x], [("f32", [1, 2])], branches=[br0, br1])
    body_jx = b.done(out)
    t = J()
    gx = t.arg("f32", [8, 2])
    y = shard_map(t, [gx], [["data"]], [["data"]], body_jx, [("f32", [8, 2])], MESH,
                  check_vma=False)
    return program("diverging-cond", [("x", "f32", [8, 2])], ["y"], MESH, t.done(y))


def diverging_sites():
    """Device 0 takes the branch whose psum negates, the others the plain psum: the same op, shape
    and count from two places of the program -- never summed together."""
    b = J()
    x = b.arg("f32", [1, 2])
    d = b.eqn("axis_index", [], [("i32", [])], axes=["data"])
    z = b.eqn("eq", [d, lit(0, "i32")], [("bool", [])])
    idx = b.eqn("convert_element_type", [z], [("i32", [])], new_dtype="i32")
    b0 = J()
    a0 = b0.arg("f32", [1, 2])
    br0 = b0.done(b0.eqn("psum", [a0], [("f32", [1, 2])], axes=["data"]))
    b1 = J()
    a1 = b1.arg("f32", [1, 2])
    n1 = b1.eqn("neg", [a1], [("f32", [1, 2])])
    br1 = b1.done(b1.eqn("psum", [n1], [("f32", [1, 2])], axes=["data"]))
    out = b.eqn("cond", [idx, x], [("f32", [1, 2])], branches=[br0, br1])
    body_jx = b.done(out)
    t = J()
    gx = t.arg("f32", [8, 2])
    y = shard_map(t, [gx], [["data"]], [["data"]], body_jx, [("f32", [8, 2])], MESH,
                  check_vma=False)
    return program("diverging-sites", [("x", "f32", [8, 2])], ["y"], MESH, t.done(y))


def dump(obj):
    return json.dumps(obj, separators=(",", ":"), sort_keys=False) + "\n"


def num(v):
    return float(format(float(F32(v)), ".9g"))


def tolist(a):
    a = np.asarray(a)
    if a.dtype == np.int32:
        return a.tolist()
    return np.vectorize(num, otypes=[object])(a).tolist() if a.ndim else num(a)


def main():
    check = "--check" in sys.argv
    files = {}
    rng = np.random.default_rng(20261206)
    for name, make in [("ring-scan", ring_scan), ("while-double", while_double),
                       ("cond-psum", cond_psum), ("scan-reverse", scan_reverse),
                       ("plain-while", plain_while),
                       ("ring-scan-long", lambda: ring_scan(23, "ring-scan-long"))]:
        prog, ref, shapes = make()
        files[f"{name}.json"] = dump(prog)
        for k in (1, 2):
            inputs = {n: rng.standard_normal(s).astype(F32) * F32(3) for n, s in shapes.items()}
            if name == "cond-psum" and k == 2:
                inputs["x"] = np.abs(inputs["x"])  # the other branch
            if name in ("while-double", "plain-while"):
                inputs["x"] = np.abs(inputs["x"]) + F32(0.5)
            inputs = {n: np.asarray(v, F32) for n, v in inputs.items()}
            expected = ref(*[inputs[n] for n in shapes])
            mesh = prog["exports"][0]["mesh"]
            case = {"problem": name, "name": f"case{k}",
                    **({"mesh": {mesh[0][0]: mesh[0][1]}} if mesh else {}),
                    "input": {n: tolist(v) for n, v in inputs.items()},
                    "expected": {n: tolist(v) for n, v in expected.items()}}
            files[f"{name}/case{k}.json"] = dump(case)
    for name, make in [("while-forever", while_forever), ("scan-huge", scan_huge),
                       ("cond-index", cond_index), ("carry-changes", carry_changes),
                       ("diverging-cond", diverging_cond), ("diverging-sites", diverging_sites)]:
        files[f"hostile/{name}.json"] = dump(make())
    # Their inputs: plain cases ({"input": ...}: the program is given on the command line).
    files["hostile/x2.json"] = dump({"input": {"x": [1.0, 2.0]}})
    files["hostile/x4.json"] = dump({"input": {"x": [1.0, 2.0, 3.0, 4.0]}})
    files["hostile/i1.json"] = dump({"input": {"i": 1, "x": [1.0, 2.0]}})
    files["hostile/i5.json"] = dump({"input": {"i": 5, "x": [1.0, 2.0]}})
    files["hostile/x8x2.json"] = dump({"input": {"x": [[float(i), 1.0] for i in range(8)]}})
    stale = []
    for rel, text in files.items():
        path = os.path.join(HERE, rel)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(rel)
            if not check:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
    if check and stale:
        print("stale:", ", ".join(stale))
        sys.exit(1)
    print(("would change: " if check else "wrote: ") + str(len(stale)) + " of " + str(len(files)))


if __name__ == "__main__":
    main()
