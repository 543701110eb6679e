"""truth14_platform.py: tp-mlp/wrong-platform-dependent-no-psum-off-cpu off CPU. Lowers the
jitted program for cpu and for cuda / tpu (cross-platform lowering, no device needed) and counts
the all-reduces in the StableHLO; then runs the program's default (non-CPU) branch on CPU by
patching lax.platform_dependent to take `default`, and compares out with the reference."""
import os, sys, re, importlib.util
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import numpy as np, jax, jax.numpy as jnp
here = os.path.dirname(os.path.abspath(__file__))
def load():
    spec = importlib.util.spec_from_file_location("m", os.path.join(here, "tp-mlp", "wrong-platform-dependent-no-psum-off-cpu.py"))
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); return mod
rng = np.random.default_rng(5)
R = lambda *s: rng.uniform(-2, 2, s).astype(np.float32)
args = (R(4, 3), R(3, 16), R(16), R(16, 2), R(2))
f = load().make(8)
for plat in ("cpu", "cuda", "tpu"):
    try:
        txt = f.trace(*args).lower(lowering_platforms=(plat,)).as_text()
        print(plat, "all_reduce ops in the lowered program:", len(re.findall(r"all_reduce", txt)))
    except Exception as e:
        print(plat, "lowering failed:", type(e).__name__, str(e)[:150])
orig = jax.lax.platform_dependent
jax.lax.platform_dependent = lambda *a, cpu=None, default=None, **k: default(*a)
g = load().make(8)
out = np.asarray(g(*args)[0])
jax.lax.platform_dependent = orig
h = jax.nn.relu(args[0] @ args[1] + args[2]); ref = np.asarray(h @ args[3] + args[4])
print("default branch: rel.err of out", float(np.max(np.abs(out - ref)) / (1 + np.max(np.abs(ref)))))
# ring-allreduce/wrong-platform-dependent-no-ring-off-cpu was checked the same way (2026-12-07):
# lowered for cpu 7 collective_permute ops, for cuda and tpu 0 (see MANIFEST.md).
