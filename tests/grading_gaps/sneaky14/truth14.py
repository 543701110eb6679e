"""truth14.py EX NAME MODE [ARG]: live JAX on the special inputs of sneaky14 (run from the repository
root with build/jax-venv/bin/python; XLA_FLAGS=--xla_force_host_platform_device_count=8 is set here).
MODE:
  lr V        dp-step / mlp-train with lr = V (e.g. 0.12345, 0.0125): the update is lr * grad?
  constcol    dp-step / mlp-train with x[:, 0] = 1 (a column of ones) over the whole batch
  intbig S    matmul-2d / ring-allreduce with integer-valued inputs of size S (e.g. 50000, 3e8)
  scale S     every float input but lr times S (lr divided by S^2 to keep the step stable)
  plain       ordinary random inputs
Prints, per mesh, rel.err = max|got - ref| / (1 + max|ref|) of each output against a plain
global-array reference, and the collectives in the program's jaxpr (and which sit inside a
while loop's body), for the structural cases."""
import os, sys, re, importlib.util
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import numpy as np, jax, jax.numpy as jnp
ex, name, mode = sys.argv[1], sys.argv[2], sys.argv[3]
arg = float(sys.argv[4]) if len(sys.argv) > 4 else None
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("m", os.path.join(here, ex, name + ".py"))
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
rng = np.random.default_rng(3)
R = lambda *s: rng.uniform(-2, 2, s).astype(np.float32)
S = arg if mode == "scale" else 1.0
if ex == "dp-step":
    N, D, K = 64, 3, 2
    x = R(N, D) * S
    if mode == "constcol": x[:, 0] = 1.0
    args = [R(D, K) * S, R(K) * S, x, R(N, K) * S, np.float32(0.05 / S**2)]
    if mode == "lr": args[4] = np.float32(arg)
    def ref(w, b, x, y, lr):
        f = lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
        l, (gw, gb) = jax.value_and_grad(f, argnums=(0, 1))(w, b); return w - lr * gw, b - lr * gb, l
    meshes = [(8,)]
elif ex == "tp-mlp":
    args = [R(4, 3) * S, R(3, 16) * S, R(16) * S, R(16, 2) * S, R(2) * S]
    def ref(x, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1); return h @ w2 + b2, h
    meshes = [(8,)]
elif ex == "mlp-train":
    x = R(16, 3) * S
    if mode == "constcol": x[:, 0] = 1.0
    args = [x, R(16, 2) * S, R(3, 16) * S, R(16) * S, R(16, 2) * S, R(2) * S, np.float32(0.05 / S**2)]
    if mode == "lr": args[6] = np.float32(arg)
    def ref(x, y, w1, b1, w2, b2, lr):
        def f(w1, b1, w2, b2):
            out = jax.nn.relu(x @ w1 + b1) @ w2 + b2; return jnp.mean(jnp.sum((out - y) ** 2, axis=1))
        l, g = jax.value_and_grad(f, argnums=(0, 1, 2, 3))(w1, b1, w2, b2)
        return (*[p - lr * gg for p, gg in zip((w1, b1, w2, b2), g)], l)
    meshes = [(2, 4), (4, 2), (8, 1), (1, 8)]
elif ex == "matmul-2d":
    if mode == "intbig":
        args = [np.full((8, 5), arg, np.float32), np.full((5, 16), arg, np.float32)]
    else:
        args = [R(8, 5) * S, R(5, 16) * S]
    ref = lambda x, w: (x @ w,); meshes = [(2, 4)]
else:
    args = [np.full((16, 3), arg, np.float32) if mode == "intbig" else R(16, 3) * S]
    ref = lambda x: (x.reshape(8, -1, x.shape[1]).sum(0),); meshes = [(8,)]
for m in meshes:
    f = mod.make(*m)
    got = f(*args); got = got if isinstance(got, (tuple, list)) else (got,)
    exp = ref(*[jnp.asarray(a) for a in args])
    errs = [float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(e, np.float64)))
                  / (1 + np.max(np.abs(np.asarray(e, np.float64))))) for g, e in zip(got, exp)]
    print(f"{ex}/{name} mesh {m} mode {mode} {arg if arg is not None else ''}: rel.err "
          f"{['%.1e' % e for e in errs]}")
    if mode in ("intbig", "lr", "constcol"):
        print("   got first elements", [np.ravel(np.asarray(g))[:3].tolist() for g in got])
        print("   ref first elements", [np.ravel(np.asarray(e))[:3].tolist() for e in exp])
    jx = str(jax.make_jaxpr(f)(*args))
    coll = {p: len(re.findall(r"\b" + p + r"\[", jx)) for p in ("psum", "pmax", "pmin", "all_gather", "ppermute", "while", "cond")}
    print("   jaxpr primitives:", {k: v for k, v in coll.items() if v})
