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
from meshrun_export import EXERCISES  # noqa: E402 - the exercise files (cases/exercises/)

# Each exercise's gallery is exported for its exercise file's "meshes"; its cases are the
# exercise's ("cases").
GALLERY_MESHES = {prog: [",".join(f"{a}={n}" for a, n in m) for m in ex["meshes"]]
                  for prog, ex in EXERCISES.items()}
GALLERY_CASES = {prog: os.path.relpath(ex["cases"], ROOT) for prog, ex in EXERCISES.items()}
# Every submission in cases/submissions/<program>/*.py, found by listing the directory (a new
# submission, or a new exercise's gallery, needs no edit here).
GALLERY = {prog: sorted(os.path.splitext(f)[0]
                        for f in os.listdir(os.path.join(ROOT, "cases/submissions", prog))
                        if f.endswith(".py"))
           for prog in GALLERY_MESHES
           if os.path.isdir(os.path.join(ROOT, "cases/submissions", prog))}

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
    "cases/programs/ring-allreduce.json":
        ["cases/exercises/ring-allreduce/reference.py:make", "--case",
         "cases/exercises/ring-allreduce/cases", *_meshes("ring=8")],
    "cases/programs/matmul-2d.json":
        ["cases/exercises/matmul-2d/reference.py:make", "--case",
         "cases/exercises/matmul-2d/cases", *_meshes("data=2,model=4")],
}
for _prog, _names in GALLERY.items():
    for _n in _names:
        JOBS[f"cases/submissions/{_prog}/{_n}.json"] = [
            f"cases/submissions/{_prog}/{_n}.py:make", "--case", GALLERY_CASES[_prog],
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
