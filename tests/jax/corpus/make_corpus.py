"""Regenerates tests/jax/corpus/: programs modelled on JAX's shard_map tutorial
(docs/notebooks/shard_map.md) and tests (tests/shard_map_test.py) of jax-ml/jax, each citing its
source. For each program <name>: <module>.py (the JAX source, a factory of the mesh sizes),
<name>.json (exported with `python -m meshrun_export`, PROGRAMS below holds each command line's
parts) and <name>/case1.json (inputs drawn from a fixed seed; `expected` = live JAX's outputs
with 9 significant digits, which read back to JAX's float32 bits). Needs live JAX, the `make jax`
environment:

    build/jax-venv/bin/python tests/jax/corpus/make_corpus.py            # rewrite them
    build/jax-venv/bin/python tests/jax/corpus/make_corpus.py --check    # exit 1 if one would change
    build/jax-venv/bin/python tests/jax/corpus/make_corpus.py scan-rnn   # only these

Run from anywhere; paths are the repository's. `meshrun check --program
tests/jax/corpus/<name>.json tests/jax/corpus/<name>/ --atol 0 --rtol 0` grades them.
"""
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "jax", "programs"))

import numpy as np  # noqa: E402

import _common  # noqa: E402,F401 - 8 CPU devices before JAX starts
import make_cases  # noqa: E402 - the export arguments of tests/jax/programs
from make_cases import case_text  # noqa: E402 - the case format of tests/jax/programs
from meshrun_export.compare import MAX_NORMWISE, normwise_apart  # noqa: E402

# name -> module, factory, one case's dimension sizes (split dimensions divisible by 8)
PROGRAMS = {
    "dp-grad": {"module": "dp_grad", "sizes": dict(D=3, H=2, N=16)},
    "fsdp-remat": {"module": "fsdp_remat", "sizes": dict(D=3, H=8, N=16)},
    "fori-static": {"module": "fori_static", "sizes": dict(N=16)},
    "fori-traced": {"module": "fori_traced", "sizes": dict(N=16, D=3)},
    "scan-rnn": {"module": "scan_rnn", "sizes": dict(H=3, T=4, N=8)},
    "while-loop": {"module": "while_loop", "sizes": dict(N=16)},
    "cond-switch": {"module": "cond_switch", "sizes": dict(N=16, D=3)},
    "remat-shmap": {"module": "remat_shmap", "sizes": dict(N=16)},
    "closed-call": {"module": "closed_call", "sizes": dict(H=3, N=16)},
    "collective-matmul": {"module": "collective_matmul", "sizes": dict(M=16, K=4, F=16)},
    "ring-allreduce-fori": {"module": "ring_allreduce", "sizes": dict(R=16, C=16)},
    "attention3d": {"module": "attention3d", "sizes": dict(B=8, S=4, E=3)},
    "pmax-pmin": {"module": "pmax_pmin", "sizes": dict(N=16, D=3)},
    # axis_index_groups (issue #50)
    "groups-gather": {"seed": 5130, "module": "groups_gather", "sizes": dict(N=8, C=8)},
    "groups-scatter": {"seed": 5140, "module": "groups_scatter", "sizes": dict(N=8, C=8)},
    "groups-all-to-all": {"seed": 5150, "module": "groups_all_to_all", "sizes": dict(N=8, C=8)},
    "groups-reduce": {"seed": 5160, "module": "groups_reduce", "sizes": dict(N=16, D=3)},
    # pooling and top-k routing (lib/interp/ops/windows.cpp, ops/sorting.cpp, ops/cumulative.cpp)
    "maxpool-cnn": {"seed": 5130, "module": "maxpool_cnn", "sizes": dict(C=4, L=6, N=16)},
    "topk-routing": {"seed": 5140, "module": "topk_routing", "sizes": dict(E=8, N=160)},
    # issue #49: a grouped conv layer and its gradient (conv_general_dilated, rev)
    "conv-grad": {"seed": 5130, "module": "conv_grad", "sizes": dict(N=16, S=5, C=4, K=3, F=4)},
    # ---- indexing (issue #49): x.at[i].set, x.at[i].add, gathers and their transposes
    "pipeline-pp": {"seed": 5130, "module": "pipeline_pp", "sizes": dict(F=4, L=4, N=8)},
    "psum-scatter-add": {"seed": 5140, "module": "psum_scatter_add", "sizes": dict(N=64, C=3)},
    "embed-xent": {"seed": 5150, "module": "embed_xent", "sizes": dict(V=6, E=4, C=3, N=16, T=5)},
    "embed-scores": {"seed": 5160, "module": "embed_xent", "factory": "make_scores",
                     "sizes": dict(V=6, E=4, C=3, N=16, T=5)},
    # partial manual shard_maps, axis_names= a subset of the mesh axes (issue #50)
    "partial-auto": {"seed": 5170, "module": "partial_auto", "sizes": dict(N=8, D=8)},
    "partial-auto-ppermute": {"seed": 5180, "module": "partial_auto_ppermute", "sizes": dict(N=16)},
    "partial-nested": {"seed": 5190, "module": "partial_nested", "sizes": dict(N=8, D=8)},
    "partial-nested-3d": {"seed": 5200, "module": "partial_nested_3d", "sizes": dict(N=4, D=6)},
    "vmap-spmd": {"seed": 5210, "module": "vmap_spmd", "sizes": dict(B=4, N=8, D=3)},
    "partial-nested-grad": {"seed": 5220, "module": "partial_nested_grad", "sizes": dict(N=8, D=8)},
    # ---- linear algebra (issue #49): cholesky, triangular_solve, lu, custom_linear_solve, stack
    "batched-solve": {"seed": 5310, "module": "batched_solve", "sizes": dict(N=16, D=4, K=2)},
    # ---- dtypes (issue #49): the collectives on bf16, a mixed-precision (bf16) MLP step
    "collectives-bf16": {"seed": 5410, "module": "collectives_bf16", "sizes": dict(N=64, D=3)},
    "mlp-bf16": {"seed": 5420, "module": "mlp_bf16", "sizes": dict(D=4, H=8, C=2, N=32)},
    # ---- dtypes2 (issue #49): psum, psum_scatter, pmean of f16, bf16, i8, u16
    "collectives-narrow": {"seed": 5430, "module": "collectives_narrow", "sizes": dict(N=64, D=8)},
    # ---- jax.random inside a program (issue #49): dropout with fold_in(key, axis_index)
    "dropout-rng": {"seed": 5430, "module": "dropout_rng", "sizes": dict(N=64, D=5)},
    # ---- uint32's sort inside a program (issue #49): permutation, choice without replacement
    "shuffle-rng": {"seed": 5440, "module": "shuffle_rng", "sizes": dict(N=56, D=6)},
    # ---- a mesh declared in another order; ppermute numbers by the mesh's order (issue #47)
    "mesh-order": {"seed": 5450, "module": "mesh_order", "sizes": dict(N=64, D=3)},
}
for _p in PROGRAMS.values():
    _p.setdefault("factory", "make")


def draw(mod, sizes, seed):
    rng = np.random.default_rng(seed)
    dtypes = getattr(mod, "DTYPES", {})
    ints = getattr(mod, "INTS", {})
    out = {}
    for n in mod.INPUTS:
        shape = tuple(sizes[d] for d in mod.SHAPES[n].split(",") if d)
        if dtypes.get(n) == "i32":
            lo, hi = ints.get(n, (0, 4))
            out[n] = np.asarray(rng.integers(lo, hi, shape), dtype=np.int32)
        elif dtypes.get(n) in ("bf16", "f16"):  # issue #49: the dtype's nearest to the draw
            import meshrun_export as mx
            out[n] = (rng.standard_normal(shape) * 0.5).astype(mx.NP_DTYPES[dtypes[n]])
        elif dtypes.get(n) in ("i8", "u8", "i16", "u16"):  # dtypes2: over the whole range
            import meshrun_export as mx
            info = np.iinfo(mx.NP_DTYPES[dtypes[n]])
            out[n] = rng.integers(int(info.min), int(info.max) + 1, shape).astype(info.dtype)
        else:
            out[n] = np.asarray(rng.standard_normal(shape) * 0.5, dtype=np.float32)
    return out


def live(fn, inputs):
    """fn on the inputs; on a mesh with Explicit axes the inputs placed as the exporter places
    them (the shard_map's in_specs)."""
    import jax
    import meshrun_export as mx
    args = list(inputs.values())
    try:
        return jax.device_get(fn(*args))
    except ValueError as err:
        if "in_specs passed to shard_map" not in str(err):
            raise
    mx.make_jaxpr(fn, args)  # learns the placements
    placements = mx._PLACEMENTS[id(fn)][1]
    placed = [a if s is None else jax.device_put(a, s) for a, s in zip(args, placements)]
    return jax.device_get(fn(*placed))


def export_argv(name):
    return make_cases.export_argv(name, PROGRAMS, "tests/jax/corpus")


def generate(name):
    """{relative path: text} of one program's case."""
    p = PROGRAMS[name]
    mod = importlib.import_module(p["module"])
    fn = getattr(mod, p["factory"])()
    # The first 13 programs' seeds follow their place in PROGRAMS; every later one names its own
    # (branches append to the list, and a place would move with the order they merge in).
    inputs = draw(mod, p["sizes"], seed=p.get("seed", 5000 + 10 * list(PROGRAMS).index(name)))
    res = live(fn, inputs)
    if not isinstance(res, (tuple, list)):
        res = (res,)
    outputs = dict(zip(mod.OUTPUTS, res))
    return {f"{name}/case1.json": case_text(name, 1, mod.MESH, inputs, outputs,
                                            getattr(mod, "DTYPES", {}))}


def main(argv):
    check = "--check" in argv
    only = [a for a in argv if not a.startswith("--")]
    import tempfile
    from meshrun_export.__main__ import ExportError, build
    bad = 0
    for name in PROGRAMS:
        if only and name not in only:
            continue
        try:
            files = generate(name)
        except Exception as err:  # noqa: BLE001 - one line per program JAX itself refuses
            print(f"{name}: JAX failed: {type(err).__name__}: {str(err).splitlines()[0]}",
                  file=sys.stderr)
            bad += 1
            continue
        with tempfile.TemporaryDirectory() as tmp:
            target = tmp if check else ROOT
            for rel, text in files.items():
                path = os.path.join(target, "tests/jax/corpus", rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
            cwd = os.getcwd()
            os.chdir(target)
            try:
                av = export_argv(name)
                av[0] = os.path.join(ROOT, av[0])
                text, report, _ = build(av)
            except ExportError as err:
                print(f"{name}: not exported: {err}", file=sys.stderr)
                bad += 1
                continue
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
                        print(f"ok: tests/jax/corpus/{rel}: JAX's outputs {d:.1e} of their "
                              f"magnitude from the committed ones (XLA's code differs by CPU)",
                              file=sys.stderr)
                        continue
                    print(f"stale: tests/jax/corpus/{rel}" +
                          (f" (expected {d:.1e} apart)" if d is not None else ""),
                          file=sys.stderr)
                    bad += 1
            else:
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "w") as f:
                    f.write(text)
    if check:
        print("make_corpus: " + ("ok" if not bad else f"{bad} stale file(s)"), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
