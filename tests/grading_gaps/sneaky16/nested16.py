"""nested16.py EX NAME -- structure of a sneaky16 submission under live JAX: compiles make(**mesh)
on case-like shapes and prints (1) the executable's input shardings (the block of each input
every device holds) and (2) the per-device shapes of the dot/reduce/all-gather/all-reduce ops in
the compiled (SPMD-partitioned) HLO, so one sees whether a device multiplies with a block of w or
with all of it. Run with build/jax-venv/bin/python."""
import os, sys, re, importlib.util
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import numpy as np, jax

ex, name = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("sub", os.path.join(here, ex, name + ".py"))
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
if ex == "mlp-train":
    names = ["x", "y", "w1", "b1", "w2", "b2", "lr"]
    shapes = [(16, 4), (16, 3), (4, 32), (32,), (32, 3), (3,), ()]
    meshes = [dict(data=2, model=4), dict(data=4, model=2), dict(data=1, model=8), dict(data=8, model=1)]
else:
    names = ["x", "w"]; shapes = [(8, 5), (5, 16)]; meshes = [dict(data=2, model=4)]
only = sys.argv[3:] 
for m in meshes:
    if only and f"{m['data']}x{m['model']}" not in only: continue
    f = mod.make(**m)
    args = [np.ones(s, np.float32) for s in shapes]
    c = f.lower(*args).compile()
    print(m)
    for n, s, sh in zip(names, shapes, c.input_shardings[0]):
        print(f"  {n} {s}: each device holds {tuple(sh.shard_shape(s))}   ({sh})")
    hlo = c.as_text()
    ops = []
    for line in hlo.splitlines():
        mm = re.search(r"= (\S+) (dot|all-gather|all-reduce|reduce|reduce-scatter|collective-permute|all-to-all)\((.*?)\)", line)
        if mm:
            ops.append(f"{mm.group(2)} -> {mm.group(1)}  ({mm.group(3)[:120]})")
    for o in ops: print("   ", o)
