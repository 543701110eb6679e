"""verify.py EX NAME [SHAPE_SPEC ...]: run tests/grading_gaps/sneaky11/EX/NAME.py (or cases/submissions/EX/NAME.py)'s make() under live JAX on random
inputs (several shapes, incl. shapes no case has) and compare with a plain JAX reference (global arrays).
SHAPE_SPEC e.g. N=40,D=3,K=2 ; mesh taken from defaults (dp data=8, tp model=8, mm 2x4, ring 8, mlp data=2,model=4)."""
import os, sys, importlib.util
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import numpy as np, jax, jax.numpy as jnp
ex, name = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location(name.replace('-', '_'), next(p for p in (f"tests/grading_gaps/sneaky11/{ex}/{name}.py", f"cases/submissions/{ex}/{name}.py") if __import__("os").path.exists(p)))
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
rng = np.random.default_rng(0)
def R(*s, scale=1.0): return (rng.uniform(-2, 2, s) * scale).astype(np.float32)

def ref_dp(w, b, x, y, lr):
    f = lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    l, (gw, gb) = jax.value_and_grad(f, argnums=(0, 1))(w, b)
    return w - lr * gw, b - lr * gb, l
def ref_tp(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1); return h @ w2 + b2, h
def ref_mlp(x, y, w1, b1, w2, b2, lr):
    def f(w1, b1, w2, b2):
        out = jax.nn.relu(x @ w1 + b1) @ w2 + b2
        return jnp.mean(jnp.sum((out - y) ** 2, axis=1))
    l, g = jax.value_and_grad(f, argnums=(0, 1, 2, 3))(w1, b1, w2, b2)
    return (*[p - lr * gg for p, gg in zip((w1, b1, w2, b2), g)], l)
def ref_mm(x, w): return (x @ w,)
def ref_ring(x, n=8): return (x.reshape(n, -1, x.shape[1]).sum(0),)

defaults = {"dp-step": ["N=8,D=1,K=1", "N=64,D=4,K=3", "N=48,D=3,K=2", "N=72,D=5,K=2"],
            "tp-mlp": ["B=4,D=3,H=16,O=2", "B=16,D=8,H=128,O=8", "B=5,D=12,H=192,O=3", "B=3,D=9,H=24,O=2"],
            "mlp-train": ["B=8,D=2,H=8,O=1", "B=16,D=4,H=32,O=3", "B=12,D=5,H=24,O=2", "B=40,D=3,H=48,O=2"],
            "matmul-2d": ["B=8,D=5,H=16", "B=16,D=4,H=8", "B=6,D=11,H=24", "B=10,D=20,H=12"],
            "ring-allreduce": ["N=8,D=2", "N=128,D=2", "N=24,D=3", "N=40,D=5"]}
specs = sys.argv[3:] or defaults[ex]
scales = [float(s) for s in os.environ.get("SCALES", "1").split(",")]
worst = 0.0
for sp in specs:
  for sc in scales:
    d = {k: int(v) for k, v in (kv.split("=") for kv in sp.split(","))}
    if ex == "dp-step":
        args = (R(d["D"], d["K"], scale=sc), R(d["K"], scale=sc), R(d["N"], d["D"], scale=sc), R(d["N"], d["K"], scale=sc), np.float32(0.05))
        f, ref = mod.make(), ref_dp
    elif ex == "tp-mlp":
        args = (R(d["B"], d["D"], scale=sc), R(d["D"], d["H"], scale=sc), R(d["H"], scale=sc), R(d["H"], d["O"], scale=sc), R(d["O"], scale=sc))
        f, ref = mod.make(), ref_tp
    elif ex == "mlp-train":
        args = (R(d["B"], d["D"], scale=sc), R(d["B"], d["O"], scale=sc), R(d["D"], d["H"], scale=sc), R(d["H"], scale=sc), R(d["H"], d["O"], scale=sc), R(d["O"], scale=sc), np.float32(0.05))
        f, ref = mod.make(int(os.environ.get("DATA", 2)), int(os.environ.get("MODEL", 4))), ref_mlp
    elif ex == "matmul-2d":
        args = (R(d["B"], d["D"], scale=sc), R(d["D"], d["H"], scale=sc)); f, ref = mod.make(), ref_mm
    else:
        args = (R(d["N"], d["D"], scale=sc),); f, ref = mod.make(), ref_ring
    try:
        got = f(*args)
    except Exception as e:
        print(f"{sp} x{sc}: ERROR {type(e).__name__}: {str(e)[:200]}"); worst = float('inf'); continue
    got = got if isinstance(got, (tuple, list)) else (got,)
    exp = ref(*[jnp.asarray(a) for a in args])
    errs = []
    for g, e in zip(got, exp):
        g, e = np.asarray(g, np.float64), np.asarray(e, np.float64)
        if g.shape != e.shape: errs.append(float('inf')); continue
        errs.append(float(np.max(np.abs(g - e)) / (1 + np.max(np.abs(e)))))
    worst = max(worst, max(errs))
    print(f"{sp} x{sc}: rel.err per output {['%.2e' % e for e in errs]}")
print("WORST %.3e" % worst)
