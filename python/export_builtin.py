"""Regenerates the committed program files with live JAX: cases/programs/*.json (the built-in
programs of bench/jax/programs.py) and cases/submissions/<program>/*.json (the gallery).

    build/jax-venv/bin/python python/export_builtin.py            # rewrite them
    build/jax-venv/bin/python python/export_builtin.py --check    # exit 1 if one would change

Run from anywhere; paths are the repository's. Every file is one command line of
`python -m meshrun_export` (JOBS below), so each can be rerun by hand."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def _meshes(*ms):
    out = []
    for m in ms:
        out += ["--mesh", m]
    return out


MLP_MESHES = ["data=2,model=4", "data=1,model=1", "data=1,model=8", "data=2,model=2",
              "data=4,model=2", "data=8,model=1", "data=2,model=1", "data=1,model=2",
              "data=4,model=1", "data=1,model=4"]
GALLERY_MESHES = {"dp-step": ["data=8"], "tp-mlp": ["model=8"],
                  "mlp-train": ["data=2,model=4", "data=1,model=8", "data=4,model=2",
                                "data=8,model=1"]}
GALLERY = {"dp-step": ["right", "naive-no-pcast", "closes-over-x", "psum-no-divide",
                       "lr-literal", "x-replicated"],
           "tp-mlp": ["right", "b2-every-device", "gathers-w1"],
           "mlp-train": ["right", "naive-no-pcast"]}

JOBS = {
    "cases/programs/dp-step.json":
        ["bench/jax/programs.py:make_dp_step", "--case", "cases/dp-step",
         *_meshes("data=1", "data=2", "data=4", "data=8")],
    "cases/programs/tp-mlp.json":
        ["bench/jax/programs.py:make_tp_mlp", "--case", "cases/tp-mlp",
         *_meshes("model=1", "model=2", "model=4", "model=8")],
    "cases/programs/mlp-train.json":
        ["bench/jax/programs.py:make_mlp_train", "--case", "cases/mlp-train",
         *_meshes(*MLP_MESHES)],
}
for _prog, _names in GALLERY.items():
    for _n in _names:
        JOBS[f"cases/submissions/{_prog}/{_n}.json"] = [
            f"cases/submissions/{_prog}/{_n}.py:make", "--case", f"cases/{_prog}",
            "--exercise", _prog, "--name", f"{_prog}/{_n}", *_meshes(*GALLERY_MESHES[_prog])]


def generate(path, log=None):
    """The text the job of `path` exports now."""
    from meshrun_export.__main__ import build
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        text, report, _ = build(JOBS[path])
    finally:
        os.chdir(cwd)
    if log:
        for mesh_txt, how in report:
            log(f"{path}: {mesh_txt}: {how}")
    return text


def main(argv):
    check = "--check" in argv
    only = [a for a in argv if not a.startswith("--")]
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    bad = 0
    for path in JOBS:
        if only and not any(o in path for o in only):
            continue
        text = generate(path, log=lambda m: print(m, file=sys.stderr))
        full = os.path.join(ROOT, path)
        if check:
            old = open(full).read() if os.path.exists(full) else None
            if old != text:
                print(f"{path}: differs from a fresh export", file=sys.stderr)
                bad += 1
        else:
            with open(full, "w") as f:
                f.write(text)
            print(f"{path}: {len(text)} bytes", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
