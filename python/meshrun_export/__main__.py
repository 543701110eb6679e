"""python -m meshrun_export MODULE:FUNCTION --case CASE.json [--case ...] -o PROG.json
python -m meshrun_export MODULE:FACTORY --case CASE.json [--case ...] [--mesh data=8 ...] -o PROG.json

MODULE is an importable module name or a path to a .py file. FUNCTION is the program itself, a
function of the global arrays (jax.jit(jax.shard_map(...))) on the mesh it holds; FACTORY(mesh
sizes) returns such a function for each --mesh (see python/README.md)."""
import argparse
import glob
import importlib
import importlib.util
import os
import sys


def parse_mesh(text):
    mesh = []
    for part in text.split(","):
        axis, _, size = part.partition("=")
        if not axis or not size.isdigit() or int(size) < 1:
            raise SystemExit(f"meshrun_export: --mesh {text}: expected AXIS=SIZE[,AXIS=SIZE]")
        mesh.append([axis, int(size)])
    return mesh


def main(argv=None):
    try:
        text, report, out = build(argv)
    except ExportError as err:
        print(f"meshrun_export: {err}", file=sys.stderr)
        return 2
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    for mesh_txt, how in report:
        print(f"meshrun_export: {mesh_txt}: {how}", file=sys.stderr)
    return 0


class ExportError(Exception):
    pass


def build(argv=None):
    """The program file's text for a command line (without -o's writing): (text, report, -o)."""
    ap = argparse.ArgumentParser(prog="python -m meshrun_export", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", help="MODULE:FUNCTION or MODULE:FACTORY (MODULE a module name "
                                   "or a .py path)")
    ap.add_argument("--case", action="append", default=[],
                    help="a case file or a directory of them (repeatable)")
    ap.add_argument("--mesh", action="append", default=[], type=parse_mesh,
                    help="AXIS=SIZE[,AXIS=SIZE]: one export per --mesh (repeatable; default: "
                         "the cases' meshes, else the exercise's default mesh)")
    ap.add_argument("--exercise", help="an exercise of cases/exercises/ (default: the cases' "
                                       "problem): its input/output names and rules")
    ap.add_argument("--inputs", help="input names in argument order, comma-separated")
    ap.add_argument("--outputs", help="output names in result order, comma-separated")
    ap.add_argument("--shape", action="append", default=[],
                    help="INPUT=DIM,DIM: the dimension names of one input (repeatable)")
    ap.add_argument("--dtype", action="append", default=[],
                    help="INPUT=DTYPE: an input's dtype, f32 (default), i32, bool, bf16, f16, i8, "
                         "u8, i16 or u16 (repeatable)")
    ap.add_argument("--name", help="the program's name (default: the exercise or FACTORY)")
    ap.add_argument("--concrete", action="store_true",
                    help="no symbolic dimensions: one export per shape signature of the cases")
    ap.add_argument("-o", "--output", help="the program file (default: stdout)")
    a = ap.parse_args(argv)

    # XLA_FLAGS before JAX starts: enough host devices for the largest mesh.
    need = max([8] + [_prod(m) for m in a.mesh])
    flag = f"--xla_force_host_platform_device_count={need}"
    if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")

    import meshrun_export as mx

    mod_name, _, fn_name = a.target.rpartition(":")
    if not mod_name or not fn_name:
        ap.error("target must be MODULE:FUNCTION or MODULE:FACTORY")
    mod = load_module(mod_name)
    if not hasattr(mod, fn_name):
        ap.error(f"{mod_name} has no attribute {fn_name}")
    factory = getattr(mod, fn_name)

    paths = []
    for c in a.case:
        paths += sorted(glob.glob(os.path.join(c, "*.json"))) if os.path.isdir(c) else [c]
    cases = [mx.load_case(p) for p in paths]
    exercise = a.exercise
    if exercise is None:
        problems = {c["problem"] for c in cases}
        if len(problems) == 1 and next(iter(problems)) in mx.EXERCISES:
            exercise = next(iter(problems))
    dtypes = {}
    for s in a.dtype:
        n, _, dt = s.partition("=")
        if not n or dt not in mx.NP_DTYPES:
            ap.error(f"--dtype {s}: expected INPUT=" + "|".join(mx.NP_DTYPES))
        dtypes[n] = dt
    names = a.inputs.split(",") if a.inputs else (
        [n for n, _ in mx.EXERCISES[exercise]["inputs"]] if exercise else None)
    meshes = a.mesh
    if mx.is_program(factory, names):
        # the function itself, its mesh fixed inside it: export that mesh only
        if not cases:
            ap.error(f"{a.target} is a function of the arrays: --case is needed to trace it")
        fn = factory
        try:
            mesh = mx.mesh_of_function(fn, cases[0], names, dtypes)
        except mx.Unsupported as err:
            raise ExportError(f"{a.target}: {err}") from err
        except Exception as err:  # noqa: BLE001 - JAX's tracing error, in one line
            raise ExportError(f"{a.target}: {cases[0]['path']}: not traced ({type(err).__name__}: "
                              f"{str(err).splitlines()[0] if str(err) else ''})") from err
        if meshes and meshes != [mesh]:
            ap.error(f"{a.target} runs on its own mesh "
                     f"{','.join(f'{k}={v}' for k, v in mesh)}; --mesh cannot change it "
                     f"(export a factory of the mesh sizes instead)")
        meshes = [mesh]
        factory = lambda *_a, **_k: fn  # noqa: E731
    if not meshes:
        order = [ax for ax, _ in mx.EXERCISES[exercise]["mesh"]] if exercise else []
        for c in cases:
            if c["mesh"]:
                keys = sorted(c["mesh"], key=lambda k: (order.index(k) if k in order else 99, k))
                m = [[k, int(c["mesh"][k])] for k in keys]
            elif exercise:
                m = mx.EXERCISES[exercise]["mesh"]
            else:
                ap.error(f"{c['path']}: no --mesh given and none in the case")
            if m not in meshes:
                meshes.append(m)
        if not meshes and exercise:
            meshes = [mx.EXERCISES[exercise]["mesh"]]
        if not meshes:
            ap.error("no --mesh given and no cases")
    shapes = None
    if a.shape:
        shapes = {}
        for s in a.shape:
            n, _, dims = s.partition("=")
            shapes[n] = [d for d in dims.split(",") if d]
    try:
        prog, report = mx.export_factory(
            factory, meshes, cases,
            names=names if a.inputs else None,
            outputs=a.outputs.split(",") if a.outputs else None,
            shapes=shapes, exercise=exercise, name=a.name, dtypes=dtypes,
            function=f"{os.path.splitext(os.path.basename(mod_name))[0]}:{fn_name}", symbolic=not a.concrete)
    except mx.Unsupported as err:
        raise ExportError(f"{a.target}: {err}") from err
    return mx.dumps(prog), report, a.output


def _prod(mesh):
    n = 1
    for _, s in mesh:
        n *= s
    return n


def load_module(name):
    if name.endswith(".py") or os.sep in name:
        path = os.path.abspath(name)
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    sys.path.insert(0, os.getcwd())
    return importlib.import_module(name)


if __name__ == "__main__":
    sys.exit(main())
