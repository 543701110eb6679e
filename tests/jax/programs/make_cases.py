"""Regenerates tests/jax/programs/: each program's cases (inputs drawn from a fixed seed,
`expected` = JAX's jit outputs with 9 significant digits, so they read back to JAX's float32 bits)
and its program file, exported with `python -m meshrun_export` (PROGRAMS below holds each
command line). Needs live JAX, the `make jax` environment:

    build/jax-venv/bin/python tests/jax/programs/make_cases.py            # rewrite them
    build/jax-venv/bin/python tests/jax/programs/make_cases.py --check    # exit 1 if one would change

Run from anywhere; paths are the repository's. `meshrun check --program
tests/jax/programs/<name>.json tests/jax/programs/<name>/` grades them (tests/jax/CMakeLists.txt).
"""
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from meshrun_export.compare import MAX_NORMWISE, normwise_apart  # noqa: E402

# name -> module, factory, and the cases' dimension sizes (every split dimension divisible by
# its mesh axes). One case per entry of `sizes`.
PROGRAMS = {
    "mlp-block-tanh": {"module": "mlp_block", "factory": "make",
                       "sizes": [dict(B=8, D=4, H=8), dict(B=4, D=6, H=16), dict(B=16, D=8, H=8),
                                 dict(B=2, D=5, H=4)]},
    "mlp-block-erf": {"module": "mlp_block", "factory": "make_erf",
                      "sizes": [dict(B=8, D=4, H=8), dict(B=4, D=6, H=16), dict(B=16, D=8, H=8),
                                dict(B=2, D=5, H=4)]},
    "xent": {"module": "xent", "factory": "make",
             "sizes": [dict(N=16, D=4, K=3), dict(N=8, D=3, K=5), dict(N=32, D=6, K=4),
                       dict(N=16, D=16, K=10)]},
    # N = sequences * attention.SEQ (4), E = heads * attention.HEAD (2), heads even
    "attention": {"module": "attention", "factory": "make",
                  "sizes": [dict(N=16, D=4, E=4), dict(N=32, D=6, E=8), dict(N=16, D=5, E=12),
                            dict(N=48, D=3, E=4)]},
    # N divisible by 8 (x split over data and model together)
    "coverage": {"module": "coverage", "factory": "make",
                 "sizes": [dict(N=16, D=3, H=4), dict(N=8, D=5, H=2), dict(N=32, D=2, H=6),
                           dict(N=24, D=4, H=3)]},
}


def num(v):
    return format(float(np.float32(v)), ".9g")


def nested(a, fmt):
    a = np.asarray(a)
    if a.ndim == 0:
        return fmt(a.item())
    return "[" + ", ".join(nested(r, fmt) for r in a) + "]"


def case_text(name, idx, mesh, inputs, outputs, dtypes):
    fmt_in = {n: (lambda v: str(int(v))) if dtypes.get(n) == "i32" else num for n in inputs}
    lines = ['{"problem": "%s",' % name, ' "name": "case%d",' % idx,
             ' "mesh": {%s},' % ", ".join(f'"{a}": {s}' for a, s in mesh)]
    lines.append(' "input": {' + ",\n           ".join(
        f'"{n}": {nested(v, fmt_in[n])}' for n, v in inputs.items()) + "},")
    lines.append(' "expected": {' + ",\n              ".join(
        f'"{n}": {nested(v, num)}' for n, v in outputs.items()) + "}}")
    return "\n".join(lines) + "\n"


def draw(mod, sizes, seed):
    rng = np.random.default_rng(seed)
    dtypes = getattr(mod, "DTYPES", {})
    out = {}
    for n in mod.INPUTS:
        shape = tuple(sizes[d] for d in mod.SHAPES[n].split(",") if d)
        if dtypes.get(n) == "i32":
            out[n] = rng.integers(0, sizes["K"], shape).astype(np.int32)
        elif n == "lr":
            out[n] = np.float32(rng.choice([0.05, 0.1, 0.2]))
        else:
            scale = 1.0 if n in ("x", "y") else 0.5
            out[n] = (rng.standard_normal(shape) * scale).astype(np.float32)
    return out


def export_argv(name, programs=None, folder="tests/jax/programs"):
    """The `python -m meshrun_export` arguments of program `name` of `programs` (default: this
    folder's PROGRAMS) in `folder` (tests/jax/corpus/make_corpus.py's too)."""
    p = (programs or PROGRAMS)[name]
    mod = importlib.import_module(p["module"])
    argv = [os.path.join(folder, p["module"] + ".py") + ":" + p["factory"],
            "--case", f"{folder}/{name}", "--name", name,
            "--inputs", ",".join(mod.INPUTS), "--outputs", ",".join(mod.OUTPUTS)]
    for n in mod.INPUTS:
        argv += ["--shape", f"{n}={mod.SHAPES[n]}"]
    for n, dt in getattr(mod, "DTYPES", {}).items():
        argv += ["--dtype", f"{n}={dt}"]
    argv += ["--mesh", ",".join(f"{a}={s}" for a, s in mod.MESH)]
    return argv


def generate(name):
    """{relative path: text} of one program's cases and program file."""
    import jax
    p = PROGRAMS[name]
    mod = importlib.import_module(p["module"])
    fn = getattr(mod, p["factory"])()
    files = {}
    for i, sizes in enumerate(p["sizes"], 1):
        inputs = draw(mod, sizes, seed=1000 * (list(PROGRAMS).index(name) + 1) + i)
        res = jax.device_get(fn(*inputs.values()))
        outputs = dict(zip(mod.OUTPUTS, res))
        files[f"{name}/case{i}.json"] = case_text(name, i, mod.MESH, inputs, outputs,
                                                  getattr(mod, "DTYPES", {}))
    return files


def main(argv):
    check = "--check" in argv
    only = [a for a in argv if not a.startswith("--")]
    import tempfile
    from meshrun_export.__main__ import build
    bad = 0
    for name in PROGRAMS:
        if only and name not in only:
            continue
        files = generate(name)
        with tempfile.TemporaryDirectory() as tmp:
            target = tmp if check else ROOT
            for rel, text in files.items():
                path = os.path.join(target, "tests/jax/programs", rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
            # the exporter's command line, run from the root of `target` (the cases' paths
            # are relative); the module path is the repository's
            cwd = os.getcwd()
            os.chdir(target)
            try:
                av = export_argv(name)
                av[0] = os.path.join(ROOT, av[0])
                text, report, _ = build(av)
            finally:
                os.chdir(cwd)
            files[f"{name}.json"] = text
            for mesh_txt, how in report:
                print(f"{name}: {mesh_txt}: {how}", file=sys.stderr)
        for rel, text in files.items():
            full = os.path.join(HERE, rel)
            if check:
                old = open(full).read() if os.path.exists(full) else None
                if old != text:
                    d = None if old is None else normwise_apart(old, text)
                    if d is not None and d <= MAX_NORMWISE:
                        print(f"ok: tests/jax/programs/{rel}: JAX's outputs {d:.1e} of their "
                              f"magnitude from the committed ones (XLA's code differs by CPU)",
                              file=sys.stderr)
                        continue
                    print(f"stale: tests/jax/programs/{rel}" +
                          (f" (expected {d:.1e} apart)" if d is not None else ""), file=sys.stderr)
                    bad += 1
            else:
                with open(full, "w") as f:
                    f.write(text)
    if check:
        print("make_cases: " + ("ok" if not bad else f"{bad} stale file(s)"), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
