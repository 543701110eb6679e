"""truth15_nested.py EX NAME -- for the nested shard_map programs (outer manual over 'data', inner
over 'model'): compiles make(**mesh) under live JAX on the first case-like shapes and prints the
executable's input shardings, and, per device, the shape of the block of each input it holds
(addressable shards of the inputs placed with those shardings). Shows that no device holds a
whole w1 / w2 / w (the inner's split is propagated to the jit's inputs by the compiler).
Run with build/jax-venv/bin/python."""
import os, sys, importlib.util
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
for m in meshes:
    f = mod.make(**m)
    args = [np.ones(s, np.float32) for s in shapes]
    c = f.lower(*args).compile()
    print(m)
    for n, s, sh in zip(names, shapes, c.input_shardings[0]):
        blocks = sorted({tuple(sh.shard_shape(s))})
        print(f"  {n} {s}: every device holds a block of shape {blocks[0]}   ({sh})")
