"""twostep.py EX NAME: run two SGD steps under live JAX, feeding the program's own outputs (the jax.Arrays
it returned, as a training loop does) into the second step, and compare with two steps of the plain
global-array reference. A program whose 'replicated' parameters disagree across devices shows it here
even through np.asarray (device 0's view)."""
import os, sys, importlib.util
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import numpy as np, jax, jax.numpy as jnp


def _source(ex, name):
    """The submission: in any hostile pass's folder (tests/grading_gaps/sneaky*/), or in the
    gallery (the classes the grader closed were moved there)."""
    import glob
    gaps = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = sorted(glob.glob(os.path.join(gaps, "sneaky*", ex, name + ".py")))
    root = os.path.abspath(os.path.join(gaps, "..", ".."))
    return found[0] if found else os.path.join(root, "cases", "submissions", ex, name + ".py")
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    return here if os.path.exists(here) else os.path.join(root, "cases", "submissions", ex,
                                                           name + ".py")

ex, name = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("m", _source(ex, name))
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
rng = np.random.default_rng(1)
R = lambda *s: rng.uniform(-2, 2, s).astype(np.float32)
if ex == "dp-step":
    def ref(w, b, x, y, lr):
        f = lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
        l, (gw, gb) = jax.value_and_grad(f, argnums=(0, 1))(w, b)
        return w - lr * gw, b - lr * gb, l
    N, D, K = 64, 4, 3
    x, y, lr = R(N, D), R(N, K), np.float32(0.05)
    w, b = R(D, K), R(K)
    f = mod.make()
    o1 = f(w, b, x, y, lr); o2 = f(o1[0], o1[1], x, y, lr)
    r1 = ref(w, b, x, y, lr); r2 = ref(r1[0], r1[1], x, y, lr)
else:
    def ref(x, y, w1, b1, w2, b2, lr):
        def f(w1, b1, w2, b2):
            out = jax.nn.relu(x @ w1 + b1) @ w2 + b2
            return jnp.mean(jnp.sum((out - y) ** 2, axis=1))
        l, g = jax.value_and_grad(f, argnums=(0, 1, 2, 3))(w1, b1, w2, b2)
        return (*[p - lr * gg for p, gg in zip((w1, b1, w2, b2), g)], l)
    B, D, H, O = 16, 4, 32, 3
    x, y, lr = R(B, D), R(B, O), np.float32(0.05)
    p = (R(D, H), R(H), R(H, O), R(O))
    f = mod.make(2, 4)
    o1 = f(x, y, *p, lr); o2 = f(x, y, *o1[:4], lr)
    r1 = ref(x, y, *p, lr); r2 = ref(x, y, *r1[:4], lr)
for step, (o, r) in enumerate(((o1, r1), (o2, r2)), 1):
    errs = [float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(e, np.float64))) / (1 + np.max(np.abs(np.asarray(e)))))
            for a, e in zip(o, r)]
    print(f"step {step}: rel.err per output {['%.1e' % e for e in errs]}")
