#!/usr/bin/python3
"""Writes the case files under cases/dp-step, cases/tp-mlp and cases/mlp-train.

The expected values are computed here, independently of meshrun, with numpy in float32 following
the JAX reference (each of the 8 shards computes its own loss/gradients, then the mean; tp-mlp
sums the 8 partial products). As JAX's CPU backend computes it: matrix products accumulate with
fused multiply-add (XLA:CPU always allows FMA fusion), and the cross-device sum is a left fold in
rank order d0+d1+...+d7 (XLA's in-process all-reduce). Printed as the float32's shortest decimal
rounded half away from zero to 6 places, this model reproduces the six documented outputs digit
for digit (checked below). Run from anywhere: /usr/bin/python3 cases/tools/gen_cases.py
meshrun itself never needs Python; the JSON files are committed.

mlp-train is simulated device by device on its ('data', 'model') mesh the same way (psum over
'model' in rank order, pmean over 'data' in rank order), and every result is checked against an
unsharded float64 computation of the same SGD step, and against PyTorch autograd (float64) when
`import torch` works (Debian's python3-torch).
"""
import decimal
import json
import os

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEVICES = 8
f32 = np.float32


def fold_sum(values):
    """Left fold over devices in rank order: ((v0+v1)+v2)+..., in float32."""
    total = np.asarray(values[0], dtype=f32)
    for v in values[1:]:
        total = (total + np.asarray(v, dtype=f32)).astype(f32)
    return total


def fold_mean(values):
    return (fold_sum(values) / f32(len(values))).astype(f32)


def matmul_fma(a, b):
    """a @ b accumulated with fused multiply-add over k in order (exact in float64, then rounded)."""
    a, b = np.asarray(a, dtype=f32), np.asarray(b, dtype=f32)
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=f32)
    for k in range(a.shape[1]):
        acc = (a[:, k:k + 1].astype(np.float64) * b[k:k + 1, :].astype(np.float64) + acc).astype(f32)
    return acc


def dp_step(w, b, x, y, lr):
    w, b, x, y, lr = (np.asarray(a, dtype=f32) for a in (w, b, x, y, lr))
    n_local = x.shape[0] // DEVICES
    losses, gws, gbs = [], [], []
    for d in range(DEVICES):
        xs = x[d * n_local:(d + 1) * n_local]
        ys = y[d * n_local:(d + 1) * n_local]
        err = matmul_fma(xs, w) + b - ys
        losses.append(np.sum(err * err, dtype=f32) / f32(n_local))
        g = f32(2) * err / f32(n_local)
        gws.append(matmul_fma(xs.T, g))
        gbs.append(np.sum(g, axis=0, dtype=f32))
    loss, gw, gb = fold_mean(losses), fold_mean(gws), fold_mean(gbs)
    return {"w": w - lr * gw, "b": b - lr * gb, "loss": loss}


def tp_mlp(x, w1, b1, w2, b2):
    x, w1, b1, w2, b2 = (np.asarray(a, dtype=f32) for a in (x, w1, b1, w2, b2))
    h_local = w1.shape[1] // DEVICES
    hidden, partials = [], []
    for d in range(DEVICES):
        cols = slice(d * h_local, (d + 1) * h_local)
        h = np.maximum(matmul_fma(x, w1[:, cols]) + b1[cols], f32(0))
        hidden.append(h)
        partials.append(matmul_fma(h, w2[cols]))
    out = (fold_sum(partials) + b2).astype(f32)
    return {"out": out, "hidden": np.concatenate(hidden, axis=1)}


def mlp_train(x, y, w1, b1, w2, b2, lr, mesh=(2, 4)):
    """One SGD step of relu-MLP on a (data, model) mesh, each device's float32 arithmetic."""
    x, y, w1, b1, w2, b2, lr = (np.asarray(a, dtype=f32) for a in (x, y, w1, b1, w2, b2, lr))
    data, model = mesh
    rb, hb = x.shape[0] // data, w1.shape[1] // model
    losses, dw1, db1, dw2, db2 = [], [[] for _ in range(model)], [[] for _ in range(model)], \
        [[] for _ in range(model)], []
    for i in range(data):
        xs, ys = x[i * rb:(i + 1) * rb], y[i * rb:(i + 1) * rb]
        cols = [slice(j * hb, (j + 1) * hb) for j in range(model)]
        zs = [(matmul_fma(xs, w1[:, c]) + b1[c]).astype(f32) for c in cols]
        hs = [np.maximum(z, f32(0)) for z in zs]
        out = (fold_sum([matmul_fma(h, w2[c]) for h, c in zip(hs, cols)]) + b2).astype(f32)
        err = (out - ys).astype(f32)
        losses.append(f32(np.sum(err * err, dtype=f32) / f32(rb)))
        g = (f32(2) * err / f32(rb)).astype(f32)
        db2.append(np.sum(g, axis=0, dtype=f32))
        for j, c in enumerate(cols):
            dw2[j].append(matmul_fma(hs[j].T, g))
            dz = np.where(zs[j] > 0, matmul_fma(g, w2[c].T), f32(0)).astype(f32)
            dw1[j].append(matmul_fma(xs.T, dz))
            db1[j].append(np.sum(dz, axis=0, dtype=f32))
    step = lambda p, grad: (p - lr * grad).astype(f32)
    return {"w1": np.concatenate([step(w1[:, c], fold_mean(dw1[j]))
                                  for j, c in enumerate(slice(j * hb, (j + 1) * hb) for j in range(model))], axis=1),
            "b1": np.concatenate([step(b1[j * hb:(j + 1) * hb], fold_mean(db1[j])) for j in range(model)]),
            "w2": np.concatenate([step(w2[j * hb:(j + 1) * hb], fold_mean(dw2[j])) for j in range(model)]),
            "b2": step(b2, fold_mean(db2)),
            "loss": fold_mean(losses)}


def mlp_train_f64(x, y, w1, b1, w2, b2, lr):
    """The same step unsharded in float64, gradients by hand: the reference's own check."""
    x, y, w1, b1, w2, b2, lr = (np.asarray(a, dtype=np.float64) for a in (x, y, w1, b1, w2, b2, lr))
    z = x @ w1 + b1
    h = np.maximum(z, 0)
    err = h @ w2 + b2 - y
    g = 2 * err / x.shape[0]
    dz = (g @ w2.T) * (z > 0)
    return {"w1": w1 - lr * (x.T @ dz), "b1": b1 - lr * dz.sum(0), "w2": w2 - lr * (h.T @ g),
            "b2": b2 - lr * g.sum(0), "loss": (err * err).sum(1).mean()}


def mlp_train_torch(x, y, w1, b1, w2, b2, lr):
    """The same step by PyTorch autograd (float64), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    t = {k: torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=k in ("w1", "b1", "w2", "b2"))
         for k, v in dict(x=x, y=y, w1=w1, b1=b1, w2=w2, b2=b2).items()}
    out = torch.relu(t["x"] @ t["w1"] + t["b1"]) @ t["w2"] + t["b2"]
    loss = ((out - t["y"]) ** 2).sum(1).mean()
    loss.backward()
    result = {k: (t[k] - float(lr) * t[k].grad).detach().numpy() for k in ("w1", "b1", "w2", "b2")}
    result["loss"] = loss.detach().numpy()
    return result


def check_close(name, got, reference, what):
    for k, v in reference.items():
        a, b = np.asarray(got[k], dtype=np.float64), np.asarray(v, dtype=np.float64)
        assert a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-5), (name, what, k, a, b)


def shortest(v):
    """The float32's shortest round-trip decimal, as a JSON number."""
    return float(str(f32(v)))


def tolist(a):
    a = np.asarray(a, dtype=f32)
    if a.ndim == 0:
        return shortest(a)
    return [tolist(row) for row in a]


def write(problem, name, description, inputs, expected, raw_input_json=None, mesh=None):
    case = {"problem": problem, "name": name, "description": description,
            "input": {k: tolist(v) for k, v in inputs.items()},
            "expected": {k: tolist(v) for k, v in expected.items()}}
    if mesh is not None:
        case["mesh"] = {"data": mesh[0], "model": mesh[1]}
    text = json.dumps(case, separators=(",", ":"))
    if raw_input_json is not None:  # keep the input's own spelling (integers, exponents)
        text = text.replace(json.dumps(case["input"], separators=(",", ":")), raw_input_json)
    path = os.path.join(ROOT, problem, name + ".json")
    with open(path, "w") as f:
        f.write(text + "\n")


def rnd(rng, *shape, scale=1.0, decimals=2):
    return np.round(rng.uniform(-scale, scale, size=shape), decimals).astype(f32)


EXAMPLES_DP = [
    ("example1", "documented example 1: D=K=1, one example per device",
     dict(w=[[0.0]], b=[0.0], x=[[1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0], [8.0]],
          y=[[3.0], [5.0], [7.0], [9.0], [11.0], [13.0], [15.0], [17.0]], lr=0.01),
     {"w": [[1.11]], "b": [0.2], "loss": 121.0}),
    ("example2", "documented example 2: N=16, D=2, K=1",
     dict(w=[[0.1], [0.3]], b=[0.0],
          x=[[0.2, 0.1], [0.7, 0.8], [0.2, -0.7], [-1.3, -3.2], [-0.9, -0.8], [0.1, 0.3],
             [0.3, -0.3], [-0.4, 0.2], [0.1, -0.5], [0.4, 0.2], [-0.6, 0.5], [0.1, -0.2],
             [0.5, 0.0], [1.0, 1.0], [-0.1, 0.4], [-0.9, -0.4]],
          y=[[-0.8], [-0.4], [-0.3], [0.1], [-0.6], [-0.3], [-0.6], [-0.7], [0.1], [-0.2],
             [-0.4], [-0.4], [-0.7], [0.2], [-0.1], [-0.3]], lr=0.1),
     {"w": [[0.072288], [0.239088]], "b": [-0.057], "loss": 0.303913}),
    ("example3", "documented example 3: N=8, D=2, K=2",
     dict(w=[[0.1, 1.0], [-1.3, -0.4]], b=[-0.2, -0.3],
          x=[[-0.5, 0.8], [0.4, -0.4], [-0.9, -0.1], [0.8, 0.7], [2.0, 0.0], [-0.7, -0.4],
             [-0.2, -0.4], [-0.9, 0.1]],
          y=[[-0.7, 1.1], [0.6, -0.6], [0.1, 1.3], [-1.0, -0.2], [0.2, -1.1], [0.0, 1.0],
             [-0.3, 0.6], [-0.5, 1.0]], lr=0.05),
     {"w": [[0.104475, 0.8363], [-1.291212, -0.39135]], "b": [-0.195125, -0.22975],
      "loss": 3.745738}),
]

EXAMPLES_TP = [
    ("example1", "documented example 1: B=1, D=2, H=8, O=1",
     dict(x=[[0.0, 0.5]],
          w1=[[-0.8, 0.2, -1.2, -0.7, -0.1, 0.9, -1.4, 1.0], [1.3, -0.4, 0.7, 1.4, 1.7, 0.6, -0.6, -0.9]],
          b1=[-0.1, -0.1, 0.0, -0.1, 0.3, 0.4, -0.3, 0.1],
          w2=[[1.1], [0.0], [1.4], [0.2], [0.5], [0.0], [0.2], [-1.0]], b2=[0.6]),
     {"out": [[2.39]], "hidden": [[0.55, 0.0, 0.35, 0.6, 1.15, 0.7, 0.0, 0.0]]}),
    ("example2", "documented example 2: B=2, D=3, H=8, O=2",
     dict(x=[[0.0, 0.8, 0.7], [-0.1, 0.4, -0.3]],
          w1=[[-0.8, 0.7, 0.5, 0.2, 0.0, -0.9, 0.8, 0.1], [0.0, 0.2, -0.6, 0.2, 0.4, 1.5, 0.1, -0.7],
              [1.3, 0.2, -0.1, 0.2, -1.3, 0.0, 0.0, -1.2]],
          b1=[0.6, -0.4, 0.3, 0.2, -0.3, 0.4, 0.0, 0.3],
          w2=[[0.0, -0.4], [0.8, -0.5], [-0.6, 0.5], [0.0, -0.4], [0.0, -0.4], [0.9, -0.2],
              [0.9, -0.1], [0.6, 0.2]],
          b2=[-0.4, 0.1]),
     {"out": [[1.112, -1.032], [0.779, -0.32]],
      "hidden": [[1.51, 0.0, 0.0, 0.5, 0.0, 1.6, 0.08, 0.0], [0.29, 0.0, 0.04, 0.2, 0.25, 1.09, 0.0, 0.37]]}),
    ("example3", "documented example 3: B=3, D=2, H=16, O=2",
     dict(x=[[-1.6, 1.8], [-0.3, -0.9], [-0.5, -0.3]],
          w1=[[0.5, -0.6, -0.8, -0.7, 0.3, 0.2, 0.9, 1.2, 0.2, 0.3, -0.8, 0.8, 1.5, -1.2, -1.2, -0.9],
              [0.8, 1.0, 0.1, 0.0, -1.4, -1.0, -0.3, 1.2, -0.5, -0.6, 0.5, 0.5, 1.5, 0.0, 0.6, -0.2]],
          b1=[0.3, 0.1, 0.0, 0.0, 0.4, -0.1, 0.7, 0.0, 0.5, -0.1, 0.6, -0.3, -0.2, -0.2, -0.2, -0.2],
          w2=[[0.2, -0.4], [-0.5, 0.4], [0.3, -0.4], [0.0, 0.4], [-0.1, 0.0], [0.3, -0.4], [0.3, 0.4],
              [0.2, -0.7], [0.2, 0.1], [0.0, -0.2], [-0.7, 0.8], [-0.1, -0.1], [0.6, -0.7], [-0.9, 0.3],
              [0.4, 0.4], [-0.3, -0.3]],
          b2=[-0.2, 0.5]),
     {"out": [[-3.534, 4.49], [-0.194, 0.812], [-0.924, 1.478]],
      "hidden": [[0.94, 2.86, 1.46, 1.12, 0.0, 0.0, 0.0, 0.24, 0.0, 0.0, 2.78, 0.0, 0.1, 1.72, 2.8, 0.88],
                 [0.0, 0.0, 0.15, 0.21, 1.57, 0.74, 0.7, 0.0, 0.89, 0.35, 0.39, 0.0, 0.0, 0.16, 0.0, 0.25],
                 [0.0, 0.1, 0.37, 0.35, 0.67, 0.1, 0.34, 0.0, 0.55, 0.0, 0.85, 0.0, 0.0, 0.4, 0.22, 0.31]]}),
]


def round6(v):
    """The float32's shortest decimal rounded half away from zero to 6 places, as meshrun prints."""
    return float(decimal.Decimal(str(f32(v))).quantize(decimal.Decimal("1e-6"), decimal.ROUND_HALF_UP))


def check_documented(name, got, documented):
    for k, v in documented.items():
        printed = [round6(t) for t in np.asarray(got[k], dtype=f32).ravel()]
        assert printed == list(np.ravel(v)), (name, k, printed, v)


def write_examples():
    # The documented outputs are written as documented (rounded to 6 decimals); our reference
    # must agree with them, which checks the reference itself.
    for name, desc, inputs, documented in EXAMPLES_DP:
        check_documented(name, dp_step(**inputs), documented)
        case = {"problem": "dp-step", "name": name, "description": desc, "input": inputs,
                "expected": documented}
        with open(os.path.join(ROOT, "dp-step", name + ".json"), "w") as f:
            f.write(json.dumps(case, separators=(",", ":")) + "\n")
    for name, desc, inputs, documented in EXAMPLES_TP:
        check_documented(name, tp_mlp(**inputs), documented)
        case = {"problem": "tp-mlp", "name": name, "description": desc, "input": inputs,
                "expected": documented}
        with open(os.path.join(ROOT, "tp-mlp", name + ".json"), "w") as f:
            f.write(json.dumps(case, separators=(",", ":")) + "\n")


def dp_case(rng, name, desc, n, d, k, lr, scale=1.0):
    inputs = dict(w=rnd(rng, d, k, scale=scale), b=rnd(rng, k, scale=scale),
                  x=rnd(rng, n, d, scale=scale), y=rnd(rng, n, k, scale=scale), lr=f32(lr))
    write("dp-step", name, desc, inputs, dp_step(**inputs))


def tp_case(rng, name, desc, b, d, h, o, scale=1.0):
    inputs = dict(x=rnd(rng, b, d, scale=scale), w1=rnd(rng, d, h, scale=scale),
                  b1=rnd(rng, h, scale=scale), w2=rnd(rng, h, o, scale=scale), b2=rnd(rng, o, scale=scale))
    write("tp-mlp", name, desc, inputs, tp_mlp(**inputs))


def spelled(v):
    """Integers as JSON integers, every third other value in exponent notation."""
    spelled.count = getattr(spelled, "count", 0) + 1
    if float(v).is_integer():
        return str(int(v))
    if spelled.count % 3 == 0:
        return "%de-2" % round(float(v) * 100)
    if spelled.count % 3 == 1:
        return "%.3E" % float(v)
    return str(f32(v))


def spell(a):
    a = np.asarray(a)
    if a.ndim == 0:
        return spelled(a)
    return "[" + ",".join(spell(r) for r in a) + "]"


def write_integer_exponent_case(rng):
    n, d, k = 32, 3, 2
    ints = lambda *s: rng.integers(-3, 4, size=s).astype(f32)
    inputs = dict(w=ints(d, k), b=ints(k), x=ints(n, d), y=ints(n, k), lr=f32(0.01))
    # Half of x in hundredths so exponent spellings appear; values stay exactly what they spell.
    inputs["x"][::2] = np.asarray(np.round(rng.uniform(-2, 2, size=(n // 2, d)), 2), dtype=f32)
    raw_x = spell(inputs["x"])
    # Parse the spellings back the way JAX would (double, then float32).
    inputs["x"] = np.asarray(json.loads(raw_x), dtype=np.float64).astype(f32)
    raw = ('{"w":%s,"b":%s,"x":%s,"y":%s,"lr":1e-2}'
           % (spell(inputs["w"]), spell(inputs["b"]), raw_x, spell(inputs["y"])))
    case = {"problem": "dp-step", "name": "n32-d3-k2-integers-exponents",
            "description": "N=32, D=3, K=2; JSON integers and exponent notation (1e-2, 1.500E+00)",
            "input": "@INPUT@",
            "expected": {k: tolist(v) for k, v in dp_step(**inputs).items()}}
    text = json.dumps(case, separators=(",", ":")).replace('"@INPUT@"', raw)
    with open(os.path.join(ROOT, "dp-step", case["name"] + ".json"), "w") as f:
        f.write(text + "\n")


def write_relu_zero_case():
    inputs = dict(x=[[0.5, 1.0]], w1=[[-1.0] * 8, [-0.5] * 8], b1=[-0.1] * 8,
                  w2=[[0.3]] * 8, b2=[0.25])
    write("tp-mlp", "b1-d2-h8-o1-all-relu-zero",
          "every pre-activation negative: hidden is all 0.0 and out is b2 exactly", inputs,
          tp_mlp(**inputs))


def mlp_case(name, desc, inputs, mesh, raw_input_json=None):
    """Writes an mlp-train case; its expected values checked against float64 (and torch) first."""
    got = mlp_train(**inputs, mesh=mesh)
    for other in [(1, 1), (1, 8), (8, 1), (2, 4), (4, 2)]:  # the mesh does not change the step
        if inputs_fit(inputs, other):
            check_close(name, mlp_train(**inputs, mesh=other), got, "mesh %dx%d" % other)
    check_close(name, got, mlp_train_f64(**inputs), "float64")
    torch_result = mlp_train_torch(**inputs)
    if torch_result is not None:
        check_close(name, got, torch_result, "torch")
    write("mlp-train", name, desc, inputs, got, raw_input_json, mesh)


def inputs_fit(inputs, mesh):
    return len(inputs["x"]) % mesh[0] == 0 and len(inputs["b1"]) % mesh[1] == 0


def write_mlp_cases(rng):
    """B and H divisible by 8: every case runs on the meshes 1x8, 2x4, 4x2, 8x1 and 1x1."""
    os.makedirs(os.path.join(ROOT, "mlp-train"), exist_ok=True)
    r1 = lambda *s: rnd(rng, *s, decimals=1)
    for name, desc, (b, d, h, o), mesh, lr in [
            ("example1", "B=8, D=2, H=8, O=1 on data=2, model=4", (8, 2, 8, 1), (2, 4), 0.1),
            ("example2", "B=8, D=3, H=8, O=2 on data=1, model=8 (tensor parallel only)", (8, 3, 8, 2), (1, 8), 0.05),
            ("example3", "B=8, D=2, H=8, O=2 on data=8, model=1 (data parallel only)", (8, 2, 8, 2), (8, 1), 0.1),
            ("example4", "B=8, D=3, H=8, O=3 on data=4, model=2", (8, 3, 8, 3), (4, 2), 0.2),
            ("b16-d4-h32-o3", "larger: B=16, D=4, H=32, O=3 on data=2, model=4", (16, 4, 32, 3), (2, 4), 0.05)]:
        while True:  # no pre-activation within rounding of 0, where relu' would tell float32 from float64
            inputs = dict(x=r1(b, d), y=r1(b, o), w1=r1(d, h), b1=r1(h), w2=r1(h, o), b2=r1(o), lr=f32(lr))
            z = inputs["x"].astype(np.float64) @ inputs["w1"] + inputs["b1"]
            if np.min(np.abs(z)) > 0.01:
                break
        mlp_case(name, desc, inputs, mesh)
    mlp_case("all-relu-zero", "every pre-activation negative: w1 and b1 unchanged (relu' = 0)",
             dict(x=[[0.5, 1.0], [1.0, 0.5]] * 4, y=[[1.0], [-1.0]] * 4, w1=[[-1.0] * 8, [-0.5] * 8],
                  b1=[-0.1] * 8, w2=[[0.3]] * 8, b2=[0.25], lr=f32(0.1)), (2, 4))
    mlp_case("preactivation-zero", "pre-activations exactly 0.0 in columns 0-3: relu'(0) = 0 leaves them",
             dict(x=[[1.0, 0.0]] * 8, y=[[0.5], [0.2], [0.1], [0.0], [-0.1], [-0.2], [0.3], [0.4]],
                  w1=[[0.5, 0.5, 0.5, 0.5, 0.3, 0.2, 0.1, 0.4], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]],
                  b1=[-0.5, -0.5, -0.5, -0.5, 0.1, 0.1, 0.1, 0.1], w2=[[0.1]] * 8, b2=[0.0], lr=f32(0.1)),
             (2, 4))
    mlp_case("zero-x", "x all zero: only the biases and w2 move",
             dict(x=[[0.0, 0.0]] * 8, y=r1(8, 1), w1=r1(2, 8), b1=r1(8),
                  w2=r1(8, 1), b2=[0.1], lr=f32(0.1)), (2, 4))
    ints = lambda *s: rng.integers(-2, 3, size=s).astype(f32)
    inputs = dict(x=ints(8, 2), y=ints(8, 1), w1=ints(2, 8), b1=ints(8), w2=ints(8, 1), b2=ints(1),
                  lr=f32(0.01))
    raw = ('{"x":%s,"y":%s,"w1":%s,"b1":%s,"w2":%s,"b2":%s,"lr":1e-2}'
           % tuple(spell(inputs[k]) for k in ("x", "y", "w1", "b1", "w2", "b2")))
    mlp_case("integers-exponent-lr", "JSON integers everywhere, lr in exponent notation (1e-2)",
             inputs, (2, 4), raw)


def main():
    rng = np.random.default_rng(20240601)
    write_examples()
    dp_case(rng, "n16-d4-k3", "N=16, D=4, K=3 (two examples per device)", 16, 4, 3, 0.1)
    dp_case(rng, "n24-d2-k1", "N=24: divisible by 8 but not a power of two", 24, 2, 1, 0.2)
    dp_case(rng, "n8-d1-k1-lr-max", "lr = 0.3, the exercise's largest", 8, 1, 1, 0.3)
    dp_case(rng, "n256-d4-k3", "N=256, D=4, K=3: 32 examples per device", 256, 4, 3, 0.05)
    dp_case(rng, "n64-d4-k3-large-values", "values up to 100 (loss in the thousands)", 64, 4, 3,
            0.001, scale=100.0)
    write_integer_exponent_case(rng)
    tp_case(rng, "b4-d3-h16-o2", "H=16: two hidden units per device, B=4", 4, 3, 16, 2)
    tp_case(rng, "b4-d5-h32-o3", "H=32: four hidden units per device, B=4", 4, 5, 32, 3)
    tp_case(rng, "b2-d4-h64-o4", "H=64, O=4", 2, 4, 64, 4)
    tp_case(rng, "b16-d8-h128-o8", "larger: B=16, D=8, H=128, O=8", 16, 8, 128, 8)
    write_relu_zero_case()
    write_mlp_cases(rng)
    write_apart_cases(np.random.default_rng(20261206))
    write_odd_cases(np.random.default_rng(20261207))


def write_apart_cases(rng):
    """Cases where the other devices' blocks hold far more numbers than a right program receives
    (even n times over): there a program that receives as many as a block holds is judged by it
    (docs/grading.md, mixtures)."""
    r1 = lambda *s: rnd(rng, *s, decimals=1)
    for name, desc, (b, d, h, o), mesh, lr in [
            ("b64-d2-h8-o1-rows-apart", "B=64, D=2, H=8, O=1 on data=2, model=4: x and y far larger "
             "than the gradients", (64, 2, 8, 1), (2, 4), 0.05),
            ("b8-d16-h64-o1-weights-apart", "B=8, D=16, H=64, O=1 on data=1, model=8: w1 and w2 far "
             "larger than the partial outputs", (8, 16, 64, 1), (1, 8), 0.05)]:
        while True:
            inputs = dict(x=r1(b, d), y=r1(b, o), w1=r1(d, h), b1=r1(h), w2=r1(h, o), b2=r1(o), lr=f32(lr))
            z = inputs["x"].astype(np.float64) @ inputs["w1"] + inputs["b1"]
            if np.min(np.abs(z)) > 0.01:
                break
        mlp_case(name, desc, inputs, mesh)


def write_odd_cases(rng):
    """Blocks of 21 rows or units per device: odd, past 16 and not a power of two (every other
    case's blocks are 1, 2, 3, 4, 8, 16 or 32); mlp-train's of 12 rows, halved to an odd 3. A program right only on such sizes -- micro-batches
    of 4 whose remainder is dropped, hidden units in chunks of 16 and the last chunk forgotten, a
    halving tree sum that drops the odd row -- computes every other case exactly (sneaky11)."""
    dp_case(rng, "n168-d3-k2-odd-blocks", "N=168: 21 rows per device (odd, past 16)", 168, 3, 2, 0.1)
    tp_case(rng, "b3-d5-h168-o3-odd-blocks", "H=168: 21 hidden units per device, B=3", 3, 5, 168, 3)
    b, d, h, o = 24, 5, 24, 3
    while True:  # two decimals: a pre-activation within 0.01 of 0 is rare enough to redraw
        inputs = dict(x=rnd(rng, b, d), y=rnd(rng, b, o), w1=rnd(rng, d, h), b1=rnd(rng, h),
                      w2=rnd(rng, h, o), b2=rnd(rng, o), lr=f32(0.02))
        z = inputs["x"].astype(np.float64) @ inputs["w1"] + inputs["b1"]
        if np.min(np.abs(z)) > 0.01:
            break
    mlp_case("b24-d5-h24-o3-odd-halves", "B=H=24 on data=2, model=4: 12 rows per device, "
             "halved to 6 and then 3 (a halving tree meets an odd count), 6 hidden units",
             inputs, (2, 4))

if __name__ == "__main__":
    main()
