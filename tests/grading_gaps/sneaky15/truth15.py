"""truth15.py EX NAME MODE -- live JAX ground truth on special inputs for sneaky15's submissions.
Runs tests/grading_gaps/sneaky15/EX/NAME.py's (else the gallery's, as a control) make() on every mesh the exercise grades, on inputs
MODE builds, and compares each output with a plain JAX reference on the global arrays. Prints, per
output: max |got - ref|, the number of elements outside the grader's own case tolerance
(1e-5 + 1e-5 |ref|), and for the updated parameters (dp-step, mlp-train) the worst relative error
of the update p_in - p_out against the reference's.
Modes:
  plain    uniform +-[0.5, 2) (as the grader's draws): should be ok for every submission
  mixed    magnitudes mixed inside a column / a batch (an outlier row of x of 1e5 -- 1e7; dp-step
           and mlp-train: targets on two scales, y's column 0 times 1e7)
  sparse   ring-allreduce, dp-step: blocks with 5/8 of their elements zero (the rest random);
           matmul-2d: every row of x with 5 of its 8 elements zero
  big      ring-allreduce: x of 8 x 5000 rows, 2 columns (blocks of 10000 elements)
  equal    ring-allreduce: every device's block the same (x = tile of one block); tp-mlp: w1, b1,
           w2 each one block of 2 hidden units tiled over the 8 devices
  nearfit  dp-step: y = x w + b + 1.5e-4 (a model that nearly fits), lr 0.2
  active   tp-mlp, mlp-train: x, w1, b1 positive (every hidden unit active)
  bf16     ring-allreduce, matmul-2d, dp-step: the float inputs drawn as bfloat16 numbers (exactly
           representable), held in float32
Run with build/jax-venv/bin/python (sets XLA_FLAGS for 8 host devices)."""
import os, sys, importlib.util
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import numpy as np, jax, jax.numpy as jnp

ex, name, mode = sys.argv[1], sys.argv[2], sys.argv[3]
here = os.path.dirname(os.path.abspath(__file__))
src = os.path.join(here, ex, name + ".py")
if not os.path.exists(src):  # a gallery program, as a control
    src = os.path.join(here, "..", "..", "..", "cases", "submissions", ex, name + ".py")
spec = importlib.util.spec_from_file_location("sub", src)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
rng = np.random.default_rng(int(os.environ.get("SEED", 1)))


def R(*s):
    return (rng.uniform(0.5, 2.0, s) * rng.choice([-1, 1], s)).astype(np.float32)


def bf(v):
    return np.asarray(jnp.asarray(v).astype(jnp.bfloat16).astype(jnp.float32))


def ref(ex, a):
    if ex == "dp-step":
        w, b, x, y, lr = a
        f = lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
        l, (gw, gb) = jax.value_and_grad(f, argnums=(0, 1))(w, b)
        return w - lr * gw, b - lr * gb, l
    if ex == "tp-mlp":
        x, w1, b1, w2, b2 = a
        h = jax.nn.relu(x @ w1 + b1); return h @ w2 + b2, h
    if ex == "mlp-train":
        x, y, w1, b1, w2, b2, lr = a
        def f(w1, b1, w2, b2):
            out = jax.nn.relu(x @ w1 + b1) @ w2 + b2
            return jnp.mean(jnp.sum((out - y) ** 2, axis=1))
        l, g = jax.value_and_grad(f, argnums=(0, 1, 2, 3))(w1, b1, w2, b2)
        return (*[p - lr * gg for p, gg in zip((w1, b1, w2, b2), g)], l)
    if ex == "matmul-2d":
        x, w = a; return (x @ w,)
    if ex == "ring-allreduce":
        (x,) = a; return (x.reshape(8, -1, x.shape[1]).sum(0),)


def inputs(ex, mode):
    lr = np.float32(0.05)
    if ex == "dp-step":
        N, D, K = 64, 4, 3
        w, b, x, y = R(D, K), R(K), R(N, D), R(N, K)
        if mode == "mixed":
            y[:, 0] *= 1e7
        if mode == "sparse":
            for d in range(8):
                blk = x[d * 8:(d + 1) * 8]; m = rng.permutation(blk.size) < blk.size * 5 // 8
                blk.reshape(-1)[m] = 0
        if mode == "bf16":
            w, b, x, y = (bf(v) for v in (w, b, x, y))
        if mode == "nearfit":  # every target 1.5e-4 above the prediction
            y = (x.astype(np.float64) @ w + b + 1.5e-4).astype(np.float32)
            lr = np.float32(0.2)
        return [w, b, x, y, lr]
    if ex == "tp-mlp":
        B, D, H, O = 4, 3, 16, 2
        a = [R(B, D), R(D, H), R(H), R(H, O), R(O)]
        if mode == "active":  # every unit active: positive x, w1, b1
            a[0], a[1], a[2] = np.abs(a[0]), np.abs(a[1]), np.abs(a[2])
        if mode == "equal":  # every device's hidden block the same (one block of 2 units tiled)
            a[1] = np.tile(R(D, 2), (1, 8)); a[2] = np.tile(R(2), 8); a[3] = np.tile(R(2, O), (8, 1))
        if mode == "mixed":
            a[0][0] *= 1e5
        return a
    if ex == "mlp-train":
        B, D, H, O = 16, 4, 32, 3
        a = [R(B, D), R(B, O), R(D, H), R(H), R(H, O), R(O), lr]
        if mode == "mixed":
            a[1][:, 0] *= 1e7
        if mode == "active":
            a[0], a[2], a[3] = np.abs(a[0]), np.abs(a[2]), np.abs(a[3])
        return a
    if ex == "matmul-2d":
        x, w = R(8, 5), R(5, 16)
        if mode == "bf16":
            x, w = bf(x), bf(w)
        if mode == "sparse":  # 5 of every 8 elements of each row zero (D = 8 here)
            x, w = R(8, 8), R(8, 16)
            for r in range(8):
                x[r, rng.permutation(8)[:5]] = 0
        if mode == "mixed":
            x[0] *= 1e6
        return [x, w]
    if ex == "ring-allreduce":
        x = R(64, 3)
        if mode == "mixed":
            x[0] *= 1e7
        if mode == "sparse":
            for d in range(8):
                blk = x[d * 8:(d + 1) * 8]; m = rng.permutation(blk.size) < blk.size * 5 // 8
                blk.reshape(-1)[m] = 0
        if mode == "big":
            x = R(8 * 5000, 2)
        if mode == "equal":
            x = np.tile(R(8, 3), (8, 1))
        if mode == "bf16":
            x = bf(R(64, 3))
        return [x]


meshes = {"mlp-train": [dict(data=2, model=4), dict(data=1, model=8), dict(data=4, model=2),
                        dict(data=8, model=1)], "matmul-2d": [dict(data=2, model=4)]}.get(ex, [{}])
a = inputs(ex, mode)
r = ref(ex, [jnp.asarray(v) for v in a])
params = {"dp-step": [0, 1], "mlp-train": [2, 3, 4, 5]}.get(ex, [])
for m in meshes:
    got = mod.make(**m)(*[jnp.asarray(v) for v in a])
    got = got if isinstance(got, (tuple, list)) else (got,)
    line = []
    for i, (g, e) in enumerate(zip(got, r)):
        g, e = np.asarray(g, np.float64), np.asarray(e, np.float64)
        d = np.abs(g - e); bad = int((d > 1e-5 + 1e-5 * np.abs(e)).sum())
        s = f"out{i}: max|d|={d.max():.3g} bad={bad}/{d.size}"
        if i < len(params):
            pin = np.asarray(a[params[i]], np.float64)
            up_ref, up_got = pin - e, pin - g
            rel = np.abs(up_got - up_ref) / np.maximum(np.abs(up_ref), 1e-30)
            s += f" update-relerr={rel.max():.3g}"
        line.append(s)
    print(ex, name, mode, m, " | ".join(line))
