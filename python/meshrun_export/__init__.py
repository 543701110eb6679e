"""meshrun_export: JAX shard_map programs -> meshrun's program file (docs/program-format.md).

    from meshrun_export import export, export_factory, dumps
    prog = export(jitted_fn, w, b, x, y, lr, names=["w", "b", "x", "y", "lr"],
                  outputs=["w", "b", "loss"])
    open("prog.json", "w").write(dumps(prog))

`export` exports one function (one mesh) traced at the example arguments (arrays or
jax.ShapeDtypeStruct, whose shapes may hold symbolic dimensions). `export_factory` exports a
factory of such functions for several meshes, with symbolic dimensions where JAX can trace them
and one export per shape signature of the given cases where it cannot.
"""
import inspect
import json
import math
import os
import sys

import numpy as np

from .core import (EXPORTER, FORMAT_VERSION, Unsupported, definition, dims_of, dtype_name,
                   input_splits,
                   jax_version, jaxpr_json, mesh_of_jaxpr, shape)
from .serialize import dumps

__all__ = ["export", "export_factory", "dumps", "Unsupported", "EXERCISES", "load_case"]

# The exercises' inputs (with their dimension names, docs/cases.md), outputs and default mesh,
# read from the exercise files (cases/exercises/<name>/exercise.json, the same files meshrun
# embeds): an exercise added there needs no edit here. In the repository, meshrun_export/exercises
# is a symlink to cases/exercises; `pip install ./python` ships copies of the exercise.json files
# there as package data (pyproject.toml). Their "cases" and "reference" paths are the
# repository's (only the repository's tools use them).
EXERCISES_DIR = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              "exercises"))


def _exercises(folder=EXERCISES_DIR):
    folder = os.path.realpath(folder)
    out = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        path = os.path.join(folder, name, "exercise.json")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            ex = json.load(f)
        out[ex["name"]] = {"inputs": [(a["name"], list(a["shape"])) for a in ex["inputs"]],
                           "outputs": [a["name"] for a in ex["outputs"]],
                           "mesh": [list(m) for m in ex["mesh"]],
                           "meshes": [[list(m) for m in mesh] for mesh in ex["meshes"]],
                           "cases": os.path.normpath(os.path.join(folder, name, ex["cases"])),
                           "reference": os.path.normpath(os.path.join(folder, name,
                                                                      ex["reference"]))}
    return out


EXERCISES = _exercises()


# ------------------------------------------------------------------------------------------
# Tracing with the inputs placed: on a mesh whose axes are Explicit (jax.make_mesh's default),
# shard_map requires each argument to be sharded as its in_spec says; the cases' arrays are
# plain. A trace that fails so is redone with each top-level input a ShapeDtypeStruct placed
# NamedSharding(mesh, in_spec), the specs read from the failing shard_map call.

_PLACEMENTS = {}  # id(fn) -> (fn, [NamedSharding or None per input]), learnt once per function


def _placed(args, placements):
    import jax
    if not placements:
        return list(args)
    out = []
    for a, sh in zip(args, placements):
        if sh is None:
            out.append(a)
        else:
            out.append(jax.ShapeDtypeStruct(np.shape(a), getattr(a, "dtype", np.float32),
                                            sharding=sh))
    return out


def _shard_map_frame(tb):
    """The locals of the innermost shard_map call frame (jax/_src/shard_map.py: wrapped) of a
    traceback, or None."""
    found = None
    while tb is not None:
        co = tb.tb_frame.f_code
        if co.co_name == "wrapped" and co.co_filename.endswith(
                os.path.join("jax", "_src", "shard_map.py")):
            found = tb.tb_frame.f_locals
        tb = tb.tb_next
    return found


def _placements_from(err, args):
    """[NamedSharding | None] per top-level input when `err` is shard_map's refusal of an
    unplaced argument on an Explicit mesh whose call takes the inputs as they are (same count
    and shapes), else None."""
    from jax.sharding import NamedSharding
    loc = None
    e = err
    while e is not None and loc is None:
        loc = _shard_map_frame(e.__traceback__)
        e = e.__cause__ or e.__context__
    if not loc or "in_specs passed to shard_map" not in str(err):
        return None
    try:
        mesh, specs, argnums = loc["mesh"], loc["in_specs_flat"], loc["dyn_argnums"]
        dyn_args, which = loc["dyn_args"], loc["which_dyn"]
    except KeyError:
        return None
    if len(which) != len(args):
        return None
    out = [None] * len(args)
    for k, i in enumerate(argnums):
        if tuple(np.shape(dyn_args[k])) != tuple(np.shape(args[i])):
            return None
        if specs[k] is not None:
            out[i] = NamedSharding(mesh, specs[k])
    return out


def make_jaxpr(fn, args, return_shape=False):
    """jax.make_jaxpr(fn)(*args), with the inputs placed as an Explicit mesh's shard_map needs
    (learnt from the first refusal; kept for later traces of the same function)."""
    import jax
    known = _PLACEMENTS.get(id(fn))
    placements = known[1] if known and known[0] is fn else None
    for _ in range(4):
        try:
            prev = jax.config.jax_traceback_filtering
            jax.config.update("jax_traceback_filtering", "off")
            try:
                return jax.make_jaxpr(fn, return_shape=return_shape)(*_placed(args, placements))
            finally:
                jax.config.update("jax_traceback_filtering", prev)
        except ValueError as err:
            found = _placements_from(err, args)
            if found is None or found == placements:
                raise
            placements = found
            _PLACEMENTS[id(fn)] = (fn, placements)
    raise Unsupported("the inputs could not be placed as the shard_map's in_specs need")


def _program(name, exercise, function, inputs, outputs, exports):
    prog = {"format": "meshrun-program", "version": FORMAT_VERSION, "name": name}
    if exercise:
        prog["exercise"] = exercise
    prog["producer"] = {"jax": jax_version(), "exporter": EXPORTER}
    if function:
        prog["producer"]["function"] = function
    prog["inputs"] = inputs
    prog["outputs"] = [{"name": o} for o in outputs]
    prog["exports"] = exports
    return prog


def _output_names(fn, args, outputs):
    import jax
    closed, out_shape = make_jaxpr(fn, args, return_shape=True)
    if outputs is None:
        if isinstance(out_shape, dict):
            paths = jax.tree_util.tree_flatten_with_path(out_shape)[0]
            outputs = []
            for path, _ in paths:
                if len(path) != 1 or not hasattr(path[0], "key"):
                    raise Unsupported("outputs= is needed: the result is not a flat dict")
                outputs.append(str(path[0].key))
        else:
            raise Unsupported("outputs= is needed: the result is not a dict")
    if len(outputs) != len(closed.jaxpr.outvars):
        raise Unsupported(f"{len(outputs)} output names for {len(closed.jaxpr.outvars)} outputs")
    return closed, list(outputs)


def _one_export(closed, mesh=None):
    # issue #49: uint32 and keys live inside a program only (a case file's numbers are float32)
    for kind, vs in (("input", closed.jaxpr.invars), ("output", closed.jaxpr.outvars)):
        for i, v in enumerate(vs):
            dt = getattr(getattr(v, "aval", None), "dtype", None)
            if dt is not None and (str(dt) == "uint32" or "key<" in str(dt)):
                where = definition(closed.jaxpr)
                raise Unsupported(f"{kind} {i} is {dt}: meshrun takes uint32 and PRNG keys inside "
                                  f"a program only (pass a seed, or key data bitcast to int32, "
                                  f"and convert a uint32 result to int32 or float32)"
                                  + (f" at {where}" if where else ""))
    j = jaxpr_json(closed)
    return {"mesh": mesh if mesh is not None else mesh_of_jaxpr(closed), "dims": dims_of(j),
            "jaxpr": j}


def export(fn, *example_args, names, outputs=None, shapes=None, name=None, exercise=None,
           function=None, mesh=None):
    """The program dict of `fn` traced at `example_args` (one export).

    names: the input names, one per argument. outputs: the result names in the order of the
    flattened result (default: a dict result's keys). shapes: optional {input: [dim names]} for
    the file's top-level inputs (default: the traced shapes). mesh: [[axis, size], ...] (default:
    the shard_map's)."""
    if len(names) != len(example_args):
        raise Unsupported(f"{len(names)} names for {len(example_args)} arguments")
    closed, outputs = _output_names(fn, example_args, outputs)
    inputs = []
    for n, v in zip(names, closed.jaxpr.invars):
        sh = (shapes or {}).get(n)
        try:
            dt = dtype_name(v.aval.dtype, f"input {n}")
        except Unsupported as err:
            where = definition(closed.jaxpr)
            raise Unsupported(f"{err} at {where}" if where else str(err)) from None
        inputs.append({"name": n, "dtype": dt,
                       "shape": list(sh) if sh is not None else shape(v.aval.shape)})
    return _program(name or getattr(fn, "__name__", "program"), exercise, function, inputs,
                    outputs, [_one_export(closed, mesh)])


# ------------------------------------------------------------------------------------------
# Factories: one function per mesh


def is_program(target, names=None):
    """Whether `target` is the program itself (a function of the arrays) rather than a factory
    of the mesh sizes: a JAX-wrapped function (jax.jit's, which has .lower), or a function whose
    positional parameters are the program's input names."""
    if hasattr(target, "lower") and hasattr(target, "trace"):
        return True
    try:
        params = [k for k, v in inspect.signature(target).parameters.items()
                  if v.kind in (v.POSITIONAL_ONLY, v.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return bool(names) and params == list(names)


def mesh_of_function(fn, case, names, dtypes=None):
    """The mesh [[axis, size], ...] of the shard_map inside fn, traced at one case's shapes."""
    import jax
    if names is None:
        raise Unsupported("--inputs is needed (no exercise given)")
    args = [jax.ShapeDtypeStruct(case["input"][n].shape, _np_dtype(dtypes, n)) for n in names
            if n in case["input"]]
    if len(args) != len(names):
        raise Unsupported(f"{case['path']}: the case lacks one of the inputs {', '.join(names)}")
    mesh = mesh_of_jaxpr(make_jaxpr(fn, args))
    if not mesh:
        raise Unsupported("the function has no shard_map")
    return mesh


def call_factory(factory, mesh):
    """factory(**{axis: size}) when its parameters are named after the mesh axes, else
    factory(*sizes) in mesh order."""
    sizes = {a: s for a, s in mesh}
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    if all(a in params for a in sizes):
        return factory(**sizes)
    return factory(*sizes.values())


def load_case(path):
    import json
    import os
    with open(path) as f:
        case = json.load(f)
    inp = case.get("input", case)
    arrays = {}
    for k, v in inp.items():
        if isinstance(v, dict) and "npy" in v:
            arrays[k] = np.load(os.path.join(os.path.dirname(path), v["npy"])).astype(np.float32)
        else:
            arrays[k] = np.asarray(v, dtype=np.float32)
    return {"problem": case.get("problem"), "mesh": case.get("mesh"), "input": arrays,
            "path": path}


def infer_dim_names(names, cases):
    """Dimension names from the cases alone: two dimensions share a name when they are equal in
    every case; names d0, d1, ... in order of first appearance."""
    classes, out = {}, {}
    for n in names:
        dims = []
        for d in range(cases[0]["input"][n].ndim):
            key = tuple(c["input"][n].shape[d] for c in cases)
            if key not in classes:
                classes[key] = f"d{len(classes)}"
            dims.append(classes[key])
        out[n] = dims
    return out


# The format's dtypes (docs/program-format.md) as numpy's.
NP_DTYPES = {"f32": np.float32, "i32": np.int32, "bool": np.bool_}
# issue #49, dtypes: the ones float32 holds exactly (ml_dtypes comes with JAX)
try:
    import ml_dtypes as _ml
    NP_DTYPES.update({"bf16": _ml.bfloat16, "f16": np.float16, "i8": np.int8, "u8": np.uint8,
                      "i16": np.int16, "u16": np.uint16})
except ImportError:  # no JAX here: only the three
    pass


def _np_dtype(dtypes, n):
    return NP_DTYPES[(dtypes or {}).get(n, "f32")]


def _struct_args(names, dims_of_input, sizes, dtypes=None):
    import jax
    return [jax.ShapeDtypeStruct(tuple(sizes[d] for d in dims_of_input[n]), _np_dtype(dtypes, n))
            for n in names]


def symbolic_export(fn, names, dim_names, mesh, dtypes=None):
    """Trace fn with symbolic dimensions: a dimension named N that the shard_map splits s ways
    (s > 1, the lcm over its uses) becomes s*N_blk. Returns the closed jaxpr, or raises.
    dtypes: {input: "f32" | "i32" | "bool"} (default f32)."""
    import jax
    from jax import export as jexport
    all_names = []
    for n in names:
        for d in dim_names[n]:
            if d not in all_names:
                all_names.append(d)
    # 1. a concrete trace at sizes every mesh axis divides finds how each dimension is split
    total = int(np.prod([s for _, s in mesh])) if mesh else 1
    probe = {d: total * (k + 2) for k, d in enumerate(all_names)}
    closed = make_jaxpr(fn, _struct_args(names, dim_names, probe, dtypes))
    splits = input_splits(closed)
    div = {d: 1 for d in all_names}
    for n, sp in zip(names, splits):
        for d, s in zip(dim_names[n], sp):
            div[d] = math.lcm(div[d], s)
    # 2. the symbolic trace
    syms = [d if div[d] == 1 else f"{d}_blk" for d in all_names]
    scope_dims = jexport.symbolic_shape(",".join(syms)) if syms else ()
    value = {d: (sd if div[d] == 1 else div[d] * sd)
             for d, sd in zip(all_names, scope_dims)}
    args = [jax.ShapeDtypeStruct(tuple(value[d] for d in dim_names[n]), _np_dtype(dtypes, n))
            for n in names]
    return make_jaxpr(fn, args), args


def _divisible(case, names, closed_splits):
    for n, sp in zip(names, closed_splits):
        for size, s in zip(case["input"][n].shape, sp):
            if size % s:
                return False
    return True


def export_factory(factory, meshes, cases=(), names=None, outputs=None, shapes=None,
                   exercise=None, name=None, function=None, symbolic=True, log=None,
                   dtypes=None):
    """The program dict of factory(mesh) for every mesh in `meshes` ([[axis, size], ...] each).

    names/outputs/shapes default to the exercise's (EXERCISES) when `exercise` is given; shapes
    ({input: [dim names]}) otherwise default to names inferred from the cases. With symbolic=True
    each mesh gets one symbolic export when JAX can trace it; otherwise (or when that fails) one
    export per shape signature of `cases`. dtypes ({input: "f32" | "i32" | "bool"}, default f32):
    the inputs' dtypes, which JSON cases cannot tell (an integer label input is "i32"; a case's
    values for it must then be integers). log(msg) hears what was done (default: stderr)."""
    log = log or (lambda m: print(m, file=sys.stderr))
    ex = EXERCISES.get(exercise) if exercise else None
    if names is None:
        if ex is None:
            raise Unsupported("names= is needed (no exercise given)")
        names = [n for n, _ in ex["inputs"]]
    if outputs is None and ex is not None:
        outputs = ex["outputs"]
    if shapes is None:
        if ex is not None and names == [n for n, _ in ex["inputs"]]:
            shapes = {n: s for n, s in ex["inputs"]}
        elif cases:
            shapes = infer_dim_names(names, cases)
    dtypes = dict(dtypes or {})
    for n, dt in dtypes.items():
        if n not in names:
            raise Unsupported(f"dtype given for {n}, which is not an input")
        if dt not in NP_DTYPES:
            raise Unsupported(f"dtype {dt} of input {n} is not supported "
                              f"({', '.join(NP_DTYPES)})")
    for c in cases:
        missing = [n for n in names if n not in c["input"]]
        if missing:
            raise Unsupported(f"{c['path']}: the case has no input {missing[0]}")
        for n, dt in dtypes.items():
            v = c["input"][n]
            if dt in ("bf16", "f16"):
                if not np.array_equal(v, v.astype(NP_DTYPES[dt]).astype(np.float32)):
                    raise Unsupported(f"{c['path']}: input {n} is {dt} but holds a value {dt} "
                                      "does not hold exactly")
            elif dt != "f32" and not np.array_equal(v, np.round(v)):
                raise Unsupported(f"{c['path']}: input {n} is {dt} but holds a non-integer")
    exports, report = [], []
    for mesh in meshes:
        fn = call_factory(factory, mesh)
        mesh_txt = ",".join(f"{a}={s}" for a, s in mesh)
        done = False
        if symbolic and shapes is not None:
            try:
                closed, args = symbolic_export(fn, names, shapes, mesh, dtypes)
                closed, sym_outputs = _output_names(fn, args, outputs)
                one = _one_export(closed, [list(m) for m in mesh])
            except Unsupported as err:
                # what a symbolic trace writes may not be what a concrete one does (x[:, :1]
                # is a gather with symbolic shapes, a slice with concrete ones): without cases
                # to trace concretely, the refusal stands
                if not cases:
                    raise
                log(f"meshrun_export: {mesh_txt}: symbolic export refused ({err}); "
                    f"one export per shape")
            except Exception as err:  # noqa: BLE001 - JAX's tracing error: fall back
                log(f"meshrun_export: {mesh_txt}: symbolic tracing failed "
                    f"({type(err).__name__}: {str(err).splitlines()[0]}); one export per shape")
            else:
                outputs = sym_outputs
                exports.append(one)
                report.append((mesh_txt, "symbolic"))
                done = True
        if not done:
            sigs, n_exp = [], 0
            for c in cases:
                sig = tuple(c["input"][n].shape for n in names)
                if sig in sigs:
                    continue
                sigs.append(sig)
                args = [c["input"][n].astype(_np_dtype(dtypes, n)) for n in names]
                try:
                    closed, outputs = _output_names(fn, args, outputs)
                except Unsupported:
                    raise
                except Exception as err:  # noqa: BLE001 - e.g. not divisible on this mesh
                    log(f"meshrun_export: {mesh_txt}: {c['path']}: not traced "
                        f"({type(err).__name__}: {str(err).splitlines()[0]})")
                    continue
                exports.append(_one_export(closed, [list(m) for m in mesh]))
                n_exp += 1
            report.append((mesh_txt, f"{n_exp} concrete"))
    if not exports:
        raise Unsupported("nothing exported: no case could be traced on "
                          + ("any of the meshes" if len(meshes) > 1 else "the mesh")
                          + " (the reasons are above)")
    if outputs is None:
        raise Unsupported("outputs= is needed")
    if shapes is None:
        raise Unsupported("shapes= or cases are needed for the inputs' dimension names")
    inputs = [{"name": n, "dtype": dtypes.get(n, "f32"), "shape": list(shapes[n])}
              for n in names]
    prog = _program(name or exercise or getattr(factory, "__name__", "program"), exercise,
                    function, inputs, outputs, exports)
    prog_report = report
    return prog, prog_report
