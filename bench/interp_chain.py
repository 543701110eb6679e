"""The loop-fusion measurement (bench/README.md, "The exported programs, interpreted"): a program
file with an 8-op elementwise chain over M floats per device (one FMA pair), then a sum and a
psum over data, with its .npy inputs and case. Usage: python3 bench/interp_chain.py NDEV M OUTDIR
then build/release/alternate 20 2 -- OLD/meshrun run OUTDIR/chain8-dNDEV.json OUTDIR/case-dNDEV.json
-- build/release/meshrun run ... (OLD: meshrun built before the fusion, at 000f171)."""
import json, struct, sys, random
ndev, M = int(sys.argv[1]), int(sys.argv[2])
out = sys.argv[3]
T = lambda shp: {"dtype": "f32", "shape": shp}
V = lambda i: {"var": i}
L = lambda x: {"lit": x, "dtype": "f32"}
eqns = []; nxt = [2]
def eq(p, ins, shp=["M"], params=None):
    v = nxt[0]; nxt[0] += 1
    eqns.append({"primitive": p, "params": params or {}, "in": ins, "out": [{"id": v, "type": T(shp)}]})
    return v
x, y = 0, 1
a = eq("mul", [V(x), V(y)]); b = eq("add", [V(a), V(x)])   # fma
c = eq("max", [V(b), L(0.0)]); d = eq("mul", [V(c), L(0.5)])
e = eq("sub", [V(d), V(y)]); f = eq("square", [V(e)])
g = eq("div", [V(f), L(3.0)]); h = eq("min", [V(g), V(x)]); i = eq("neg", [V(h)])
r = eq("reduce_sum", [V(i)], [], {"axes": [0]})
p = eq("psum", [V(r)], [], {"axes": ["data"]})
body = {"invars": [{"id": 0, "type": T(["M"])}, {"id": 1, "type": T(["M"])}], "eqns": eqns, "outvars": [V(p)]}
top = {"invars": [{"id": 0, "type": T([f"{ndev}*M"])}, {"id": 1, "type": T([f"{ndev}*M"])}],
       "eqns": [{"primitive": "shard_map", "params": {"mesh": [["data", ndev]], "in_specs": [["data"], ["data"]],
                 "out_specs": [[]], "check_vma": True, "jaxpr": body}, "in": [V(0), V(1)], "out": [{"id": 2, "type": T([])}]}],
       "outvars": [V(2)]}
prog = {"format": "meshrun-program", "version": 1, "name": "chain8",
        "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}, {"name": "y", "dtype": "f32", "shape": ["N"]}],
        "outputs": [{"name": "s"}], "exports": [{"mesh": [["data", ndev]], "dims": ["M"], "jaxpr": top}]}
json.dump(prog, open(f"{out}/chain8-d{ndev}.json", "w"))
n = ndev * M
def npy(path, seed):
    rnd = random.Random(seed)
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % n
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    with open(path, "wb") as fh:
        fh.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        chunk = [rnd.uniform(-2, 2) for _ in range(1 << 16)]
        buf = struct.pack("<%df" % len(chunk), *chunk)
        for k in range(n // len(chunk)): fh.write(buf)
npy(f"{out}/x-d{ndev}.npy", 1); npy(f"{out}/y-d{ndev}.npy", 2)
json.dump({"problem": "chain8", "name": "chain8", "input": {"x": {"npy": f"x-d{ndev}.npy"}, "y": {"npy": f"y-d{ndev}.npy"}}},
          open(f"{out}/case-d{ndev}.json", "w"))
