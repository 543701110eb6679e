"""checks on exact-zero inputs (no case and no random draw has them)."""
import os
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import numpy as np, jax, jax.numpy as jnp, importlib.util
def load(ex, name):
    spec = importlib.util.spec_from_file_location("m", next(p for p in (f"tests/grading_gaps/sneaky11/{ex}/{name}.py", f"cases/submissions/{ex}/{name}.py") if os.path.exists(p)))
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
def ref_dp(w, b, x, y, lr):
    f = lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    l, (gw, gb) = jax.value_and_grad(f, argnums=(0, 1))(w, b)
    return w - lr * gw, b - lr * gb, l
rng = np.random.default_rng(1)
R = lambda *s: rng.uniform(-2, 2, s).astype(np.float32)
w, b, x, y = R(3, 2), R(2), R(16, 3), R(16, 2); x[5] = 0
got = load("dp-step", "wrong-all-zero-x-rows-as-padding").make()(w, b, x, y, np.float32(0.1))
exp = ref_dp(w, b, x, y, np.float32(0.1))
print("dp-step one zero row of x: abs err per output", [float(np.max(np.abs(np.asarray(g) - np.asarray(e)))) for g, e in zip(got, exp)])
x = R(16, 2); x[6:8] = 0
got = load("ring-allreduce", "wrong-zero-block-skips-relay").make()(x)
print("ring device 3 block zero: abs err", float(np.max(np.abs(np.asarray(got) - x.reshape(8, 2, 2).sum(0)))))
