"""truth13.py EX NAME [--scale S] [--dup] [--colscale] (rel.err then per element): live JAX on special inputs (sneaky13).
--scale S: the inputs named in SCALED[EX] multiplied by S (large values);
--dup: dp-step x, y with each device block's rows 1.. a copy of its row 0 for half of the blocks.
Prints rel.err against a plain reference, the replicas' disagreement (shards with the same index),
and the collectives in the program's jaxpr (by primitive name) for the structural cases."""
import os, sys, re, importlib.util
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import numpy as np, jax, jax.numpy as jnp
sys.argv.pop(0); ex, name = sys.argv[0], sys.argv[1]
scale = float(sys.argv[sys.argv.index("--scale") + 1]) if "--scale" in sys.argv else 1.0
dup = "--dup" in sys.argv
colscale = "--colscale" in sys.argv  # ring: x[:, 1] and matmul: w[:, ::2] times 1e-6 (mixed column scales)
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("m", os.path.join(here, ex, name + ".py"))
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
rng = np.random.default_rng(1)
R = lambda *s: rng.uniform(-2, 2, s).astype(np.float32)
def replica_gap(a):
    groups = {}
    for s in a.addressable_shards:
        key = tuple((sl.start, sl.stop) for sl in s.index) if isinstance(s.index, tuple) else ()
        groups.setdefault(key, []).append(np.asarray(s.data, np.float64))
    return max([float(np.max(np.abs(b - v[0]))) if b.size else 0.0 for v in groups.values() for b in v[1:]] + [0.0])
if ex == "dp-step":
    N, D, K = 64, 4, 3
    w, b, x, y = R(D, K), R(K), R(N, D) * scale, R(N, K)
    if dup:
        for k in range(0, 8, 2): x[8*k+1:8*k+4] = x[8*k]; y[8*k+1:8*k+4] = y[8*k]
    args = (w, b, x, y, np.float32(0.01 / scale**2))
    def ref(w, b, x, y, lr):
        f = lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
        l, (gw, gb) = jax.value_and_grad(f, argnums=(0, 1))(w, b); return w - lr * gw, b - lr * gb, l
    meshes = [(8,)]
elif ex == "tp-mlp":
    args = (R(4, 3), R(3, 16) * scale, R(16), R(16, 2) * scale, R(2))
    def ref(x, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1); return h @ w2 + b2, h
    meshes = [(8,)]
elif ex == "mlp-train":
    args = (R(8, 2) * scale, R(8, 1), R(2, 8), R(8), R(8, 1), R(1), np.float32(0.05 / scale**2))
    def ref(x, y, w1, b1, w2, b2, lr):
        def f(w1, b1, w2, b2):
            out = jax.nn.relu(x @ w1 + b1) @ w2 + b2; return jnp.mean(jnp.sum((out - y) ** 2, axis=1))
        l, g = jax.value_and_grad(f, argnums=(0, 1, 2, 3))(w1, b1, w2, b2)
        return (*[p - lr * gg for p, gg in zip((w1, b1, w2, b2), g)], l)
    meshes = [(2, 4), (4, 2), (8, 1), (1, 8)]
elif ex == "matmul-2d":
    w_ = R(5, 16) * scale
    if colscale: w_[:, ::2] *= 1e-6
    args = (R(8, 5), w_); ref = lambda x, w: (x @ w,); meshes = [(2, 4)]
else:
    x_ = R(16, 3) * scale
    if colscale: x_[:, 1] *= 1e-6
    args = (x_,); ref = lambda x: (x.reshape(8, -1, x.shape[1]).sum(0),); meshes = [(8,)]
for m in meshes:
    f = mod.make(*m)
    got = f(*args); got = got if isinstance(got, (tuple, list)) else (got,)
    exp = ref(*[jnp.asarray(a) for a in args])
    errs = [float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(e, np.float64)) / (1e-30 + np.abs(np.asarray(e, np.float64))))) if colscale else float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(e, np.float64))) / (1 + np.max(np.abs(np.asarray(e, np.float64))))) for g, e in zip(got, exp)]
    reps = [replica_gap(g) for g in got]
    print(f"mesh {m} scale {scale} dup {dup}: rel.err {['%.1e' % e for e in errs]} replicas {['%.2g' % r for r in reps]}")
    jx = str(jax.make_jaxpr(f)(*args))
    coll = {p: len(re.findall(r"\b" + p + r"\[", jx)) for p in ("psum", "pmax", "all_gather", "ppermute", "cond", "dot_general", "psum_invariant")}
    print("   jaxpr primitives:", {k: v for k, v in coll.items() if v})
