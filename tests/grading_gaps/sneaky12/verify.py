"""verify.py EX NAME [--special KIND] [SHAPE_SPEC ...]
Runs tests/grading_gaps/sneaky*/EX/NAME.py's (or the gallery's cases/submissions/EX/NAME.py's) make() under live JAX (every mesh the exercise grades) on random
inputs of several shapes (case-like and others) and compares each output with a plain JAX reference
on the global arrays. Also checks that the replicas JAX holds of each output agree (shards with the
same index on different devices), since np.asarray() of a check_vma=False output reads one of them.
--special nearfit: dp-step inputs where y nearly equals x w + b (|x| <= 10).
--special dupblocks: ring x whose blocks 0 and 5 are equal (nonzero).
rel.err = max|got-ref| / (1 + max|ref|); 'replicas' = max disagreement between replica shards."""
import os, sys, importlib.util
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import numpy as np, jax, jax.numpy as jnp


def _source(ex, name):
    """The submission: in any hostile pass's folder (tests/grading_gaps/sneaky*/, sneaky13's
    included: it uses this script), or in the gallery (the classes the grader closed were moved
    there)."""
    import glob
    gaps = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = sorted(glob.glob(os.path.join(gaps, "sneaky*", ex, name + ".py")))
    root = os.path.abspath(os.path.join(gaps, "..", ".."))
    return found[0] if found else os.path.join(root, "cases", "submissions", ex, name + ".py")

args = sys.argv[1:]
ex, name = args[0], args[1]
special = None
if "--special" in args:
    i = args.index("--special"); special = args[i + 1]; del args[i:i + 2]
specs = args[2:]
spec = importlib.util.spec_from_file_location(name.replace('-', '_'), _source(ex, name))
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
rng = np.random.default_rng(int(os.environ.get("SEED", 0)))
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

defaults = {"dp-step": ["N=8,D=1,K=1", "N=64,D=4,K=3", "N=48,D=3,K=2", "N=168,D=3,K=2"],
            "tp-mlp": ["B=4,D=3,H=16,O=2", "B=16,D=8,H=128,O=8", "B=5,D=12,H=192,O=3", "B=3,D=5,H=168,O=3"],
            "mlp-train": ["B=8,D=2,H=8,O=1", "B=16,D=4,H=32,O=3", "B=24,D=5,H=24,O=3", "B=40,D=3,H=48,O=2"],
            "matmul-2d": ["B=8,D=5,H=16", "B=16,D=4,H=8", "B=6,D=11,H=24", "B=42,D=21,H=84"],
            "ring-allreduce": ["N=8,D=2", "N=128,D=2", "N=24,D=3", "N=168,D=3"]}
meshes = {"mlp-train": [(2, 4), (1, 8), (4, 2), (8, 1)], "matmul-2d": [(2, 4)]}.get(ex, [()])
specs = specs or defaults[ex]
worst = 0.0; worst_rep = 0.0
def replica_gap(a):
    groups = {}
    for s in a.addressable_shards:
        key = tuple((sl.start, sl.stop) for sl in s.index) if isinstance(s.index, tuple) else ()
        groups.setdefault(key, []).append(np.asarray(s.data, np.float64))
    gap = 0.0
    for arrs in groups.values():
        for b in arrs[1:]:
            gap = max(gap, float(np.max(np.abs(b - arrs[0]))) if b.size else 0.0)
    return gap
for mesh in meshes:
  f = mod.make(*mesh)
  for sp in specs:
    d = {k: int(v) for k, v in (kv.split("=") for kv in sp.split(","))}
    if ex == "dp-step":
        a = (R(d["D"], d["K"]), R(d["K"]), R(d["N"], d["D"]), R(d["N"], d["K"]), np.float32(0.05)); ref = ref_dp
        if special == "nearfit":  # x in +-10, y = x w + b + 1e-2 noise: a model that nearly fits
            x = R(d["N"], d["D"], scale=5.0); y = (x @ a[0] + a[1] + R(d["N"], d["K"], scale=0.005)).astype(np.float32)
            a = (a[0], a[1], x, y, np.float32(0.001))
            r64 = x.astype(np.float64) @ a[0].astype(np.float64) + a[1] - y
            print("   float64 loss", (r64 ** 2).sum() / d["N"])
    elif ex == "tp-mlp":
        a = (R(d["B"], d["D"]), R(d["D"], d["H"]), R(d["H"]), R(d["H"], d["O"]), R(d["O"])); ref = ref_tp
    elif ex == "mlp-train":
        a = (R(d["B"], d["D"]), R(d["B"], d["O"]), R(d["D"], d["H"]), R(d["H"]), R(d["H"], d["O"]), R(d["O"]), np.float32(0.05)); ref = ref_mlp
    elif ex == "matmul-2d":
        a = (R(d["B"], d["D"]), R(d["D"], d["H"])); ref = ref_mm
    else:
        x = R(d["N"], d["D"])
        if special == "dupblocks":
            B = d["N"] // 8; x[5 * B:6 * B] = x[0:B]
        a = (x,); ref = ref_ring
    try:
        got = f(*a)
    except Exception as e:
        print(f"mesh {mesh} {sp}: ERROR {type(e).__name__}: {str(e)[:300]}"); worst = float('inf'); continue
    got = got if isinstance(got, (tuple, list)) else (got,)
    exp = ref(*[jnp.asarray(v) for v in a])
    errs, reps = [], []
    for g, e in zip(got, exp):
        reps.append(replica_gap(g))
        g, e = np.asarray(g, np.float64), np.asarray(e, np.float64)
        if g.shape != e.shape: errs.append(float('inf')); continue
        errs.append(float(np.max(np.abs(g - e)) / (1 + np.max(np.abs(e)))))
    worst = max(worst, max(errs)); worst_rep = max(worst_rep, max(reps))
    print(f"mesh {mesh} {sp}: rel.err {['%.1e' % e for e in errs]} replicas {['%.1e' % r for r in reps]}")
print("WORST rel.err %.3e   WORST replica disagreement %.3e" % (worst, worst_rep))
