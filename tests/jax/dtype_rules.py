"""Regenerates tests/jax/dtype_rules/: each primitive meshrun implements whose result dtype or
value can depend on its operands' dtype (issue #31, class 5), on every dtype it accepts, as JAX
0.10.2 computes it on CPU. Per entry NAME: NAME.json, the program (one shard_map over a mesh of
one device, exported with meshrun_export, so its declared types are JAX's), and NAME.case.json,
its inputs and JAX's outputs (`expected`, 9 significant digits: JAX's float32 bits).
tests/jax/dtype_rules_cli_test.cpp runs meshrun on each with --atol 0 --rtol 0: a result dtype
other than JAX's is exit 2 (the declared type), a value other than JAX's exit 1.

    build/jax-venv/bin/python tests/jax/dtype_rules.py            # rewrite them
    build/jax-venv/bin/python tests/jax/dtype_rules.py --check    # exit 1 if one would change
"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

from meshrun_export import dumps, export  # noqa: E402
from meshrun_export.compare import MAX_NORMWISE, normwise_apart  # noqa: E402

F = np.array([-2.5, -1.5, -0.75, -0.0, 0.5, 1.5, 2.5, 7.25], np.float32)
G = np.array([2.0, -2.0, 0.5, 3.0, -0.25, 4.0, 1.5, -3.0], np.float32)
I = np.array([-7, -3, -1, 0, 1, 2, 5, 9], np.int32)
J = np.array([2, -2, 3, -3, 4, 5, -4, 7], np.int32)  # no zero: div and rem by it
B = np.array([True, False, True, True, False, False, True, False])
C = np.array([False, False, True, False, True, False, True, True])
X = {"f32": (F, G), "i32": (I, J), "bool": (B, C)}


def unary(fn, dtypes):
    return [(d, fn, (X[d][0],)) for d in dtypes]


def binary(fn, dtypes):
    return [(d, fn, X[d]) for d in dtypes]


def dot(pref):
    def f(a, b):
        return lax.dot_general(a.reshape(2, 4), b.reshape(4, 2), (((1,), (0,)), ((), ())),
                               preferred_element_type=pref)
    return f


def empty(reduce):
    return lambda x: reduce(x[:0], (0,))


# name -> [(dtype tag, function, args)]: each becomes NAME-TAG.
TABLE = {
    "add": binary(lax.add, ["f32", "i32"]),
    "sub": binary(lax.sub, ["f32", "i32"]),
    "mul": binary(lax.mul, ["f32", "i32"]),
    "div": binary(lax.div, ["f32", "i32"]),  # i32: C's truncation, not floor
    "rem": binary(lax.rem, ["f32", "i32"]),  # the dividend's sign
    "max": binary(lax.max, ["f32", "i32", "bool"]),
    "min": binary(lax.min, ["f32", "i32", "bool"]),
    "and": binary(lax.bitwise_and, ["i32", "bool"]),
    "or": binary(lax.bitwise_or, ["i32", "bool"]),
    "xor": binary(lax.bitwise_xor, ["i32", "bool"]),
    "not": unary(lax.bitwise_not, ["i32", "bool"]),
    "eq": binary(lax.eq, ["f32", "i32", "bool"]),
    "ne": binary(lax.ne, ["f32", "i32", "bool"]),
    "lt": binary(lax.lt, ["f32", "i32", "bool"]),
    "le": binary(lax.le, ["f32", "i32", "bool"]),
    "gt": binary(lax.gt, ["f32", "i32", "bool"]),
    "ge": binary(lax.ge, ["f32", "i32", "bool"]),
    "neg": unary(lax.neg, ["f32", "i32"]),
    "abs": unary(lax.abs, ["f32", "i32"]),
    "sign": unary(lax.sign, ["f32", "i32"]),
    "square": unary(lax.square, ["f32", "i32"]),
    "integer_pow": unary(lambda x: lax.integer_pow(x, 3), ["f32", "i32"]),
    "floor": unary(lax.floor, ["f32"]),
    "ceil": unary(lax.ceil, ["f32"]),
    "round": unary(lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), ["f32"]),
    "round_away": unary(lax.round, ["f32"]),
    "is_finite": unary(lax.is_finite, ["f32"]),
    "clamp": [("f32", lambda x: lax.clamp(np.float32(-1), x, np.float32(2)), (F,)),
              ("i32", lambda x: lax.clamp(np.int32(-1), x, np.int32(2)), (I,))],
    "select_n": [("bool", lambda p, x, y: lax.select_n(p, x, y), (B, F, G)),
                 ("i32", lambda x, y: lax.select_n(jnp.clip(y, 0, 2), x, x * 2, x * 3), (I, J))],
    "reduce_sum": unary(lambda x: lax.reduce_sum_p.bind(x, axes=(0,), out_sharding=None),
                        ["f32", "i32"]),
    "reduce_prod": unary(lambda x: lax.reduce_prod_p.bind(x, axes=(0,), out_sharding=None),
                         ["f32", "i32"]),
    "reduce_max": unary(lambda x: lax.reduce_max(x, (0,)), ["f32", "i32", "bool"]),
    "reduce_min": unary(lambda x: lax.reduce_min(x, (0,)), ["f32", "i32", "bool"]),
    "reduce_and": unary(lambda x: lax.reduce_and(x, (0,)), ["bool"]),
    "reduce_or": unary(lambda x: lax.reduce_or(x, (0,)), ["bool"]),
    # Over no element: the identity of the reduction in the operand's dtype (bool: False for
    # max, True for min; meshrun refuses int32's -2^31 and 2^31 - 1, beyond 2^24).
    "reduce_max_empty": unary(empty(lax.reduce_max), ["bool"]),
    "reduce_min_empty": unary(empty(lax.reduce_min), ["bool"]),
    "reduce_and_empty": unary(empty(lax.reduce_and), ["bool"]),
    "reduce_or_empty": unary(empty(lax.reduce_or), ["bool"]),
    "reduce_sum_empty": unary(empty(lax.reduce_sum), ["f32", "i32"]),
    "argmax": unary(lambda x: lax.argmax(x.reshape(2, 4), 1, jnp.int32), ["f32", "i32"]),
    "argmin": unary(lambda x: lax.argmin(x.reshape(2, 4), 1, jnp.int32), ["f32", "i32"]),
    "dot_general": binary(dot(None), ["f32", "i32"]),
    # preferred_element_type: f32 operands to an i32 result are the f32 product truncated
    # toward zero, as convert_element_type (93.5 -> 93).
    "dot_general_to_i32": [("f32", dot(jnp.int32), (F, G))],
    "dot_general_to_f32": [("i32", dot(jnp.float32), (I, J))],
    "convert_element_type": [
        ("f32-i32", lambda x: x.astype(jnp.int32), (F,)),
        ("f32-bool", lambda x: x.astype(jnp.bool_), (F,)),
        ("i32-f32", lambda x: x.astype(jnp.float32), (I,)),
        ("i32-bool", lambda x: x.astype(jnp.bool_), (I,)),
        ("bool-f32", lambda x: x.astype(jnp.float32), (B,)),
        ("bool-i32", lambda x: x.astype(jnp.int32), (B,)),
    ],
    "iota": [("i32", lambda x: x + lax.iota(jnp.int32, 8), (I,)),
             ("f32", lambda x: x + lax.iota(jnp.float32, 8), (F,))],
}


def number(v):
    if isinstance(v, (bool, np.bool_)):
        return 1 if v else 0
    if np.issubdtype(type(v), np.integer):
        return int(v)
    return float(format(float(np.float32(v)), ".9g"))


def nested(a):
    a = np.asarray(a)
    if a.ndim == 0:
        return number(a.item() if a.dtype != np.bool_ else bool(a))
    return [nested(r) for r in a]


def entry(name, fn, args):
    mesh = Mesh(np.array(jax.devices()[:1]), ("data",))
    names = ["x", "y", "z"][:len(args)]
    sm = jax.jit(jax.shard_map(lambda *a: fn(*a), mesh=mesh, in_specs=tuple(P() for _ in args),
                               out_specs=P()))
    prog = export(sm, *args, names=names, outputs=["out"], name=name, mesh=[["data", 1]])
    out = sm(*args)
    case = {"problem": name, "name": name,
            "mesh": {"data": 1}, "input": {n: nested(a) for n, a in zip(names, args)},
            "expected": {"out": nested(out)},
            "description": f"JAX {jax.__version__}: out is {out.dtype}{list(out.shape)}"}
    return dumps(prog), json.dumps(case) + "\n"


# ---- cumulative ops, sort, top_k, windows (lib/interp/ops/{cumulative,sorting,windows}.cpp); after
# entry() so that the source lines of the entries above stay as they are ----
# The cumulative ops' and sort's inputs: 2 x 40 float32 of magnitudes 1e-4 to 1e4, of either sign
# (the order of a sum shows in its last bits); 2 x 40 near 1 (products); zeros of both signs and
# ties (the order of equal keys); 40 keys of 3 values (std::sort's order of ties).
_R = np.random.default_rng(49)
LONG = (_R.standard_normal((2, 40)) * 10.0 ** _R.integers(-4, 5, (2, 40))).astype(np.float32)
NEAR1 = (1 + _R.standard_normal((2, 40)) * 0.1).astype(np.float32)
ZEROS = np.array([0.0, -0.0, 1.5, -0.0, 0.0, -2.0, 1.5, -0.0], np.float32)
TIES = np.array([3, 1, 3, 2, 1, 3, 2, 1], np.int32)
TIES40 = _R.integers(0, 3, 40).astype(np.float32)
POOLW = _R.integers(1, 5, (4, 5)).astype(np.float32)  # a max pool's cotangent
TABLE.update({
    # 2 rows of 40: longer than XLA:CPU's scan base of 16, so the tree's summation order shows.
    "cumsum": [("f32", lambda x: lax.cumsum(x, axis=1), (LONG,)),
               ("f32-reverse", lambda x: lax.cumsum(x, axis=1, reverse=True), (LONG,)),
               ("f32-axis0", lambda x: lax.cumsum(x.T, axis=0, reverse=True), (LONG,)),
               ("f32-short-reverse", lambda x: lax.cumsum(x, reverse=True), (F,)),
               ("i32", lambda x: jnp.cumsum(x), (I,)),
               ("i32-reverse", lambda x: lax.cumsum(x, reverse=True), (I,))],
    "cumprod": [("f32", lambda x: lax.cumprod(x, axis=1), (NEAR1,)),
                ("f32-reverse", lambda x: lax.cumprod(x, axis=1, reverse=True), (NEAR1,)),
                ("i32", lambda x: lax.cumprod(x, reverse=True), (J,))],
    "cummax": [("f32", lambda x: lax.cummax(x, axis=1), (LONG,)),
               ("f32-zeros", lambda x: lax.cummax(x, reverse=True), (ZEROS,)),
               ("i32", lambda x: lax.cummax(x), (I,))],
    "cummin": [("f32", lambda x: lax.cummin(x, axis=1, reverse=True), (LONG,)),
               ("f32-zeros", lambda x: lax.cummin(x), (ZEROS,)),
               ("i32", lambda x: lax.cummin(x, reverse=True), (J,))],
    # logaddexp's exp and log1p are XLA's own approximations, on JAX and on meshrun alike
    # (scalar_ops.hpp); more entries in the cumlogsumexp block below.
    "cumlogsumexp": [("f32-reverse", lambda x: lax.cumlogsumexp(x, reverse=True), (F,))],
    "sort": [("f32", lambda x: jnp.sort(x, axis=1), (LONG,)),
             ("f32-zeros", lambda x: lax.sort((x, lax.iota(jnp.float32, 8)))[1], (ZEROS,)),
             ("i32", lambda x: jnp.sort(x), (J,)),
             ("bool", lambda x: jnp.sort(x), (B,)),
             ("two-keys", lambda x, y: lax.sort((x, y, lax.iota(jnp.int32, 8)), num_keys=2)[2],
              (TIES, J)),
             ("unstable", lambda x: lax.sort((x, lax.iota(jnp.int32, 40)), is_stable=False)[1],
              (TIES40,)),
             ("unstable-two-keys", lambda x: lax.sort((x, x[::-1] % 2, lax.iota(jnp.int32, 40)),
                                                      num_keys=2, is_stable=False)[2], (TIES40,))],
    "argsort": [("f32", lambda x: jnp.argsort(x, axis=0), (LONG,)),
                ("f32-descending", lambda x: jnp.argsort(x, descending=True), (ZEROS,)),
                ("i32", lambda x: jnp.argsort(x), (I,))],
    "top_k": [("f32", lambda x: lax.top_k(x, 5)[0], (LONG,)),
              ("f32-indices", lambda x: lax.top_k(x, 5)[1], (LONG,)),
              ("f32-zeros", lambda x: lax.top_k(x, 8)[1], (ZEROS,)),
              ("i32", lambda x: lax.top_k(x, 3)[0], (TIES,)),
              ("i32-indices", lambda x: lax.top_k(x, 3)[1], (TIES,))],
    "approx_top_k": [("f32", lambda x: lax.approx_max_k(x, 5)[0], (LONG,)),
                     ("f32-indices", lambda x: lax.approx_max_k(x, 5)[1], (LONG,)),
                     ("f32-zeros", lambda x: lax.approx_max_k(x, 8)[1], (ZEROS,)),
                     ("f32-min-indices", lambda x: lax.approx_min_k(x, 6)[1], (ZEROS,))],
    # reduce_window and its forms (lib/interp/ops/windows.cpp): 2-D windows with strides, padding
    # and dilations; a window that is a whole axis (a scan to XLA:CPU); pooling's derivatives.
    "reduce_window_sum": [
        ("f32", lambda x: lax.reduce_window(x.reshape(8, 10), 0., lax.add, (2, 3), (1, 2),
                                            [(1, 0), (1, 1)]), (LONG,)),
        ("f32-dilated", lambda x: lax.reduce_window(x.reshape(8, 10), 0., lax.add, (2, 2), (1, 1),
                                                    [(0, 1), (1, 0)], base_dilation=(2, 1),
                                                    window_dilation=(1, 2)), (LONG,)),
        ("f32-scan", lambda x: lax.reduce_window(x, 0., lax.add, (1, 40), (1, 1),
                                                 [(0, 0), (39, 0)]), (LONG,)),
        ("f32-scan-exclusive", lambda x: lax.reduce_window(x, 0., lax.add, (1, 40), (1, 1),
                                                           [(0, 0), (0, 40)]), (LONG,)),
        ("i32", lambda x: lax.reduce_window(x, 0, lax.add, (3,), (2,), [(1, 2)]), (I,))],
    "reduce_window_max": [
        ("f32", lambda x: lax.reduce_window(x.reshape(8, 10), -jnp.inf, lax.max, (3, 3), (2, 2),
                                            "SAME"), (LONG,)),
        ("f32-zeros", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2,), (1,), "VALID"),
         (ZEROS,)),
        ("i32", lambda x: lax.reduce_window(x, jnp.iinfo(jnp.int32).min, lax.max, (3,), (1,),
                                            "SAME"), (I,))],
    "reduce_window_min": [
        ("f32", lambda x: lax.reduce_window(x.reshape(8, 10), jnp.inf, lax.min, (2, 4), (3, 1),
                                            [(0, 2), (1, 1)], window_dilation=(2, 1)), (LONG,)),
        ("i32", lambda x: lax.reduce_window(x, jnp.iinfo(jnp.int32).max, lax.min, (2,), (2,),
                                            "VALID"), (J,))],
    "reduce_window": [
        ("f32-mul", lambda x: lax.reduce_window(x.reshape(8, 10), 1., lax.mul, (2, 2), (2, 2),
                                                "VALID"), (NEAR1,)),
        ("f32-add-init", lambda x: lax.reduce_window(x, 1.5, lax.add, (3,), (1,), [(1, 1)]),
         (F,)),
        ("i32-mul", lambda x: lax.reduce_window(x, 1, lax.mul, (2,), (1,), "VALID"), (J,)),
        ("bool-or", lambda x: lax.reduce_window(x, False, lax.bitwise_or, (3,), (2,), "SAME"),
         (B,)),
        ("bool-and", lambda x: lax.reduce_window(x, True, lax.bitwise_and, (2,), (1,), "VALID"),
         (B,))],
    # jax.grad of a max pool (select_and_scatter_add; ties go to the first of a window, padding
    # as JAX pads it on CPU) and its jvp (select_and_gather_add).
    "select_and_scatter_add": [
        ("f32", lambda x: jax.grad(lambda x: (lax.reduce_window(
            x, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID") * POOLW).sum())(x.reshape(8, 10)),
         (LONG,)),
        ("f32-ties-same", lambda x: jax.grad(lambda x: (lax.reduce_window(
            x, -jnp.inf, lax.max, (3,), (1,), "SAME") * jnp.arange(8.0)).sum())(x), (ZEROS,)),
        ("f32-min", lambda x: jax.grad(lambda x: (lax.reduce_window(
            x, jnp.inf, lax.min, (3,), (2,), [(1, 1)]) * jnp.arange(1.0, 5.0)).sum())(x),
         (ZEROS,))],
    "select_and_gather_add": [
        ("f32", lambda x, t: jax.jvp(lambda x: lax.reduce_window(
            x, -jnp.inf, lax.max, (3,), (1,), [(1, 1)]), (x,), (t,))[1], (ZEROS, G)),
        ("f32-2d", lambda x: jax.jvp(lambda x: lax.reduce_window(
            x, -jnp.inf, lax.max, (2, 3), (2, 2), "SAME"), (x,), (x * 2.0 + 1.0,))[1],
         (LONG.reshape(8, 10),))],
})
# ---- end of cumulative ops, sort, top_k, windows ----
# ---- indexing (issue #49): gather and the scatters, every mode, on raw indices (K: out of
# bounds both ways, negative, repeated -- lax's own, not jnp's, which wraps negatives first).
# Below entry(), so that the source lines the other entries' files name stay as they were.
K = np.array([3, -1, 7, 0, 9, 3, -20, 5], np.int32)  # 8 indices into 8: OOB both ways, a repeat
K4 = np.array([2, 5, -1, 2], np.int32)  # rows of a [4, 2]: OOB both ways, a repeat
KK = np.array([[1, 2], [0, 3], [1, -1], [3, 1], [0, 0], [2, 3], [1, 3], [0, 2]], np.int32)
GD1 = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
SD1 = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,))
ROWS_G = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
ROWS_S = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
# Per row b of a [2, 4] operand, element k[b, j] of that row: operand and indices batching dims.
BATCH_G = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,),
                                     start_index_map=(1,), operand_batching_dims=(0,),
                                     start_indices_batching_dims=(0,))
BATCH_S = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(1,),
                                      scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                                      scatter_indices_batching_dims=(0,))
# A window of [1, 2] at (row, col) of a [2, 4] (2-D starts; col 3 leaves the window half out).
WIN_G = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                   start_index_map=(0, 1))
WIN_S = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                    scatter_dims_to_operand_dims=(0, 1))
_SCATTER = {"scatter": lax.scatter, "scatter_add": lax.scatter_add, "scatter_sub": lax.scatter_sub,
            "scatter_mul": lax.scatter_mul, "scatter_min": lax.scatter_min,
            "scatter_max": lax.scatter_max}


def gather1(mode, fill=None):
    def f(x, k):
        g = lax.gather(x, k[:, None], GD1, (1,), mode=mode, fill_value=fill)
        # the default fill of a float32 is NaN, which a case file cannot hold: shown as 1234
        return jnp.where(jnp.isnan(g), 1234.0, g) if x.dtype == jnp.float32 else g
    return f


def scatter1(op, mode):
    return lambda x, k, u: _SCATTER[op](x, k[:, None], u, SD1, mode=mode)


def _gs(dtypes, fn, args):
    return [(d, fn, tuple(X[d]["xy".index(a)] if isinstance(a, str) else a for a in args))
            for d in dtypes]


INDEXING = {
    "gather_clip": _gs(["f32", "i32", "bool"], gather1("clip"), ("x", K)),
    "gather_promise_in_bounds": _gs(["f32", "i32"], gather1("promise_in_bounds"), ("x", K)),
    "gather_fill": (_gs(["f32"], gather1("fill", -99.5), ("x", K)) +
                    _gs(["i32"], gather1("fill", -5), ("x", K)) +
                    _gs(["bool"], gather1("fill", False), ("x", K))),
    "gather_fill_default": _gs(["f32"], gather1("fill"), ("x", K)),
    # jnp's own: negative indices wrapped, then a gather of mode fill (take) or promise (x[i])
    "gather_take": _gs(["f32", "i32"], lambda x, k: jnp.take(x, k % 8 - 4), ("x", K)),
    "gather_getitem": _gs(["f32", "i32"], lambda x, k: x[k % 8 - 4], ("x", K)),
    "gather_rows": [(d, (lambda m: lambda x, k: lax.gather(x.reshape(4, 2), k[:, None], ROWS_G,
                                                            (1, 2), mode=m,
                                                            fill_value=-3))(m), (X[d][0], K4))
                    for d in ("f32", "i32") for m in ("clip",)] +
                   [("f32-fill", lambda x, k: lax.gather(x.reshape(4, 2), k[:, None], ROWS_G,
                                                         (1, 2), mode="fill", fill_value=-3.0),
                     (F, K4))],
    "gather_batching": _gs(["f32", "i32"], lambda x, k: lax.gather(
        x.reshape(2, 4), k.reshape(2, 4, 1), BATCH_G, (1, 1), mode="clip"), ("x", K)),
    "gather_take_along_axis": _gs(["f32", "i32"], lambda x, k: jnp.take_along_axis(
        x.reshape(2, 4), (k % 4).reshape(2, 4), axis=1), ("x", K)),
    "gather_window": [(f"{d}-{m}", (lambda m: lambda x, k: lax.gather(
        x.reshape(2, 4), k, WIN_G, (1, 2), mode=m, fill_value=-7))(m), (X[d][0], KK))
        for d in ("f32", "i32") for m in ("clip", "fill")],
    "scatter": _gs(["f32", "i32", "bool"], scatter1("scatter", "fill"), ("x", K, "y")),
    "scatter_clip": _gs(["f32", "i32"], scatter1("scatter", "clip"), ("x", K, "y")),
    "scatter_add": _gs(["f32", "i32"], scatter1("scatter_add", "fill"), ("x", K, "y")),
    "scatter_add_clip": _gs(["f32", "i32"], scatter1("scatter_add", "clip"), ("x", K, "y")),
    "scatter_add_promise_in_bounds": _gs(["f32", "i32"], scatter1("scatter_add",
                                                                  "promise_in_bounds"),
                                         ("x", K, "y")),
    "scatter_sub": _gs(["f32", "i32"], scatter1("scatter_sub", "fill"), ("x", K, "y")),
    "scatter_mul": _gs(["f32", "i32"], scatter1("scatter_mul", "clip"), ("x", K, "y")),
    "scatter_min": _gs(["f32", "i32", "bool"], scatter1("scatter_min", "clip"), ("x", K, "y")),
    "scatter_max": _gs(["f32", "i32", "bool"], scatter1("scatter_max", "clip"), ("x", K, "y")),
    # x.at[i]: jnp's own scatters (negative indices wrapped, mode fill / drop)
    "scatter_at_set": _gs(["f32", "i32"], lambda x, k, u: x.at[k % 8 - 4].set(u), ("x", K, "y")),
    "scatter_at_add": _gs(["f32", "i32"], lambda x, k, u: x.at[k % 8 - 4].add(u), ("x", K, "y")),
    # a sum of 8 terms into 2 places: the order of a repeated index, bit for bit
    "scatter_add_order": [("f32", lambda x, k, u: lax.scatter_add(
        jnp.zeros(2, jnp.float32), (k % 2)[:, None], x * 1e7 + u, SD1, mode="clip"), (F, K, G))],
    "scatter_rows": [(f"{d}-{op}", (lambda op: lambda x, k, u: _SCATTER[op](
        x.reshape(4, 2), k[:, None], u.reshape(4, 2), ROWS_S, mode="fill"))(op),
        (X[d][0], K4, X[d][1]))
        for d in ("f32", "i32") for op in ("scatter", "scatter_add")],
    "scatter_batching": _gs(["f32", "i32"], lambda x, k, u: lax.scatter_add(
        x.reshape(2, 4), k.reshape(2, 4, 1), u.reshape(2, 4), BATCH_S, mode="clip"),
        ("x", K, "y")),
    # 2-D index batch [2, 4]: row-major order over it
    "scatter_batch2d": _gs(["f32", "i32"], lambda x, k, u: lax.scatter_add(
        x, (k % 3).reshape(2, 4, 1), u.reshape(2, 4), SD1, mode="clip"), ("x", K, "y")),
    "scatter_window": [(f"{d}-{m}", (lambda m: lambda x, k, u: lax.scatter_add(
        x.reshape(2, 4), k, jnp.concatenate([u[:, None], u[:, None] * 2], axis=1), WIN_S, mode=m))(m),
        (X[d][0], KK, X[d][1])) for d in ("f32", "i32") for m in ("clip", "fill")],
}
TABLE.update(INDEXING)


def write_all(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    names = []
    for prim, rows in TABLE.items():
        for tag, fn, args in rows:
            name = f"{prim}-{tag}"
            prog, case = entry(name, fn, args)
            with open(os.path.join(out_dir, name + ".json"), "w") as f:
                f.write(prog if prog.endswith("\n") else prog + "\n")
            with open(os.path.join(out_dir, name + ".case.json"), "w") as f:
                f.write(case)
            names.append(name)
    return names


# ---- issue #49's elementwise inputs (the block at the end of TABLE)
def _math_x():
    edges = [-0.0, 0.0, 1e-40, -1e-40, 1.2e-38, -1e-30, 1e-7, -3e-5, 0.25, -0.5, 0.5, 0.999999,
             -0.9999, 1.0, -1.0, 1.5, -2.5, -3.0, 2.0, 7.25, -10.5, 30.0, -42.75, 88.5, -87.0,
             100.0, -1e4, 3.5e6, -1e20, 2e30, 3e38, -3.4e38]
    rng = np.random.default_rng(49)
    wide = rng.integers(0, 2**32, 16, dtype=np.uint64).astype(np.uint32).view(np.float32)
    wide = np.where(np.isfinite(wide), wide, np.float32(1.25))
    return np.concatenate([np.array(edges, np.float32), wide,
                           rng.uniform(-12, 12, 24).astype(np.float32),
                           rng.uniform(-1, 1, 24).astype(np.float32)])


MATH_X = _math_x()


def finite(fn):
    def f(*xs):
        y = fn(*xs)
        return lax.select(lax.is_finite(y), y, jnp.full_like(y, -7.0))
    return f


MATH_UNARY = {"exp": lax.exp, "exp2": lax.exp2, "log": lax.log, "log1p": lax.log1p,
              "expm1": lax.expm1, "logistic": lax.logistic, "erf": lax.erf, "erfc": lax.erfc,
              "tanh": lax.tanh,
              "sin": lax.sin, "cos": lax.cos, "sqrt": lax.sqrt, "cbrt": lax.cbrt,
              "tan": lax.tan, "asin": lax.asin, "acos": lax.acos, "atan": lax.atan,
              "sinh": lax.sinh, "cosh": lax.cosh, "asinh": lax.asinh, "acosh": lax.acosh,
              "atanh": lax.atanh, "lgamma": lax.lgamma, "digamma": lax.digamma}
# pow's and atan2's second operand: exponents of every kind, subnormals and zeros among them.
# (MATH_X's subnormals get 0.5 and 1/3; 1e-7^5.5 is subnormal, which XLA flushes.)
MATH_Y = np.resize(np.array([0.5, -0.5, 0.5, 0.333333, 0.5, 1e-40, 5.5, -0.0, 2.5, -2.25, 10.0,
                             0.0, 1.0, -3.0, 1e-38, 7.0], np.float32), MATH_X.shape)
# int32 inputs whose results stay within 2^24 (meshrun holds int32 in a float32, exactly to 2^24).
BITS_X = np.array([-7, -3, -1, 0, 1, 2, 5, 9, 100, -100, 12345, -16777216, 16777215, 255,
                   65536, -65536], np.int32)
SHIFT_BY = np.array([0, 1, 31, 32, 33, -1, 8, 3, 2, 40, 9, 24, 0, 4, 7, 100], np.int32)
SHL_X = np.array([-7, -3, 0, 0, 1, 2, 5, 9, 100, -100, 12345, 0, 16777215, 255, 3, -5], np.int32)
SHR_X = np.array([7, 3, 1, 0, 1, 2, 5, 9, 100000, -100, -12345, -16777216, 16777215, 255, 65536,
                  -65536], np.int32)

TABLE.update({
    # ---- issue #49, elementwise math (lib/interp/ops/float_math.cpp, bit_ops.cpp, and XLA's own
    # exp/log/log1p/expm1/erf/logistic in scalar_ops.hpp): MATH_X's edges -- zeros of both signs,
    # subnormals (XLA:CPU flushes them), the domain limits +-1, poles, |x| up to 3e38 -- and 64
    # seeded values. A NaN or infinite result is written -7 (finite(), JSON has neither).
    **{op: [("f32", finite(fn), (MATH_X,))] for op, fn in MATH_UNARY.items()},
    "pow": [("f32", finite(lax.pow), (MATH_X, MATH_Y))],
    "atan2": [("f32", finite(lax.atan2), (MATH_X, MATH_Y))],
    "reduce_precision": [(f"f32-e{e}m{m}",
                          finite(lambda x, e=e, m=m: lax.reduce_precision(x, e, m)), (MATH_X,))
                         for e, m in ((5, 10), (8, 7), (4, 3))],
    "population_count": [("i32", lax.population_count, (BITS_X,))],
    "clz": [("i32", lax.clz, (BITS_X,))],
    "shift_left": [("i32", lax.shift_left, (SHL_X, SHIFT_BY))],
    "shift_right_logical": [("i32", lax.shift_right_logical, (SHR_X, SHIFT_BY))],
    "shift_right_arithmetic": [("i32", lax.shift_right_arithmetic, (BITS_X, SHIFT_BY))],
})
# ---- end of issue #49's elementwise block

# ---- XLA:CPU's flush of subnormals (FTZ and DAZ) in the plain arithmetic: a subnormal operand
# counts as a zero of its sign, a subnormal result becomes one (lib/interp/program_run.cpp).
SUB_X = np.array([1e-39, -3e-39, 2e-38, -2e-38, 1.2e-38, 1.5e-38, 3e-38, 1e-40, 0.0, -0.0, 1.0,
                  -1.0, 1e-30, 5e-39, -1e-45, 1.17549435e-38], np.float32)
SUB_Y = np.array([0.0, 1e-39, -1.9e-38, 1.0e-38, 0.5, -0.5, 0.25, 1.0, 1e-39, -2e-39, 1e-38,
                  2.0, 1e-9, 1.0, 0.0, 0.75], np.float32)
TABLE.update({
    "flush": [("add-f32", lax.add, (SUB_X, SUB_Y)), ("sub-f32", lax.sub, (SUB_X, SUB_Y)),
              ("mul-f32", lax.mul, (SUB_X, SUB_Y)), ("max-f32", lax.max, (SUB_X, SUB_Y)),
              ("min-f32", lax.min, (SUB_X, SUB_Y)), ("div-f32", lax.div, (SUB_X, SUB_Y + 2.0)),
              ("dot-f32", lambda a, b: lax.dot_general(a.reshape(4, 4), b.reshape(4, 4),
                                                       (((1,), (0,)), ((), ()))), (SUB_X, SUB_Y)),
              ("reduce_sum-f32", lambda a: jnp.sum(a.reshape(4, 4) * 0.5, axis=1), (SUB_X,)),
              ("reduce_max-f32", lambda a: jnp.max(a.reshape(4, 4), axis=1), (SUB_X,))],
# (Not select: XLA rewrites select(a > b, a, b) into max, which flushes, while a select of
# another shape passes a subnormal's bits through -- an optimizer's pattern, not arithmetic.)
})
# ---- end of the flush block
# ---- issue #49, linear algebra (lib/interp/ops/linalg.cpp): cholesky, triangular_solve (each
# side, triangle, transpose, unit diagonal), lu's factors, int32 pivots and permutation, jnp.linalg
# solve / inv (lu + custom_linear_solve), jnp.stack. Matrices up to 4 x 4 and batches of them, where
# meshrun's LAPACK orders give JAX's bits (tests/unit/interp/primitives/linalg_prims_test.cpp
# and the batched-solve corpus program: the larger ones, within tolerance). A NaN is written -7.
_LA = np.random.default_rng(4949)
LA_X = _LA.standard_normal((3, 4, 4)).astype(np.float32)  # 3 general 4 x 4
LA_SPD = (LA_X @ LA_X.transpose(0, 2, 1) + 4 * np.eye(4)).astype(np.float32)
LA_B = _LA.standard_normal((3, 4, 2)).astype(np.float32)
LA_LOW = (np.tril(LA_X) + 3 * np.eye(4)).astype(np.float32)  # well away from singular
LA_SING = np.array([[0, 0, 1], [0, 0, 2], [1, 1, 1]], np.float32)  # LAPACK's zero pivot
LA_NOT_PD = np.array([[1, 2], [2, 1]], np.float32)
# Larger: where OpenBLAS's kernels' sums show (the 4-column sgemv, sdot's pairs, strsm's blocks of
# 16): lu of 16 x 16 and 17 x 12, cholesky of 24 x 24, a solve with m = 20.
LA_X16 = _LA.standard_normal((16, 16)).astype(np.float32)
LA_T17 = _LA.standard_normal((17, 12)).astype(np.float32)
LA_SPD24 = (lambda y: (y @ y.T + 24 * np.eye(24)).astype(np.float32))(
    _LA.standard_normal((24, 24)).astype(np.float32))
LA_LOW20 = (np.tril(_LA.standard_normal((20, 20))) + 4 * np.eye(20)).astype(np.float32)
LA_B20 = _LA.standard_normal((20, 5)).astype(np.float32)


def _tri(left, lower, trans, unit):
    def f(a, b):
        if not left:
            b = jnp.swapaxes(b, -1, -2)
        return lax.linalg.triangular_solve(a if lower else jnp.swapaxes(a, -1, -2), b,
                                           left_side=left, lower=lower, transpose_a=trans,
                                           unit_diagonal=unit)
    return f


TABLE.update({
    "cholesky": [("f32", lax.linalg.cholesky, (LA_SPD[0],)),
                 ("f32-batch", lax.linalg.cholesky, (LA_SPD,)),
                 ("f32-not-pd", finite(lax.linalg.cholesky), (LA_NOT_PD,))],
    "triangular_solve": [
        (f"f32-{'left' if l else 'right'}-{'lower' if lo else 'upper'}{'-t' if t else ''}"
         f"{'-unit' if u else ''}", _tri(l, lo, t, u), (LA_LOW, LA_B))
        for l, lo, t, u in ((1, 1, 0, 0), (1, 0, 1, 0), (1, 1, 1, 1), (0, 1, 0, 0),
                            (0, 0, 1, 0), (0, 0, 0, 1))],
    "lu": [("f32-3x3", lambda x: lax.linalg.lu(x)[0], (LA_X[0, :3, :3],)),
           ("pivots-batch", lambda x: lax.linalg.lu(x)[1], (LA_X,)),
           ("perm-batch", lambda x: lax.linalg.lu(x)[2], (LA_X,)),
           ("f32-singular", lambda x: lax.linalg.lu(x)[0], (LA_SING,)),
           ("pivots-singular", lambda x: lax.linalg.lu(x)[1], (LA_SING,)),
           ("perm-wide", lambda x: lax.linalg.lu(x)[2], (LA_X[0, :2, :],)),
           ("perm-tall", lambda x: lax.linalg.lu(x)[2], (LA_X[0, :, :3],))],
    "custom_linear_solve": [("f32-solve", jnp.linalg.solve, (LA_SPD[0, :3, :3], LA_B[0, :3])),
                            ("f32-inv", jnp.linalg.inv, (LA_LOW[0, :3, :3],))],
    "lu-large": [("f32-16x16", lambda x: lax.linalg.lu(x)[0], (LA_X16,)),
                 ("pivots-16x16", lambda x: lax.linalg.lu(x)[1], (LA_X16,)),
                 ("f32-17x12", lambda x: lax.linalg.lu(x)[0], (LA_T17,))],
    "cholesky-large": [("f32-24x24", lax.linalg.cholesky, (LA_SPD24,))],
    "triangular_solve-large": [("f32-m20-upper-t", lambda a, b: lax.linalg.triangular_solve(
        a.T, b, left_side=True, lower=False, transpose_a=True), (LA_LOW20, LA_B20)),
        ("f32-m20-right", lambda a, b: lax.linalg.triangular_solve(
            a, b.T, left_side=False, lower=True), (LA_LOW20, LA_B20))],
    "lu_pivots_to_permutation": [
        ("i32-out-of-range", lambda p: lax.linalg.lu_pivots_to_permutation(p, 7),
         (np.array([2, -1, 7, 0, -9, 3], np.int32),)),
        ("i32-batch", lambda p: lax.linalg.lu_pivots_to_permutation(p, 4),
         (np.array([[2, 2, 3], [0, 1, 2]], np.int32),))],
    "lu_solve": [("f32", lambda a, b: jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(a), b),
                  (LA_X[2], LA_B[2]))],
    "cho_solve": [("f32", lambda a, b: jax.scipy.linalg.cho_solve(
        (jnp.linalg.cholesky(a), True), b), (LA_SPD[1], LA_B[1]))],
    # lax.platform_dependent: a platform_index and a cond on it (CPU's branch)
    "platform_index": [("diagonal", jnp.diagonal, (LA_X[1],)),
                       ("det", jnp.linalg.det, (LA_X,)),
                       ("slogdet", lambda a: jnp.linalg.slogdet(a)[1], (LA_X,)),
                       ("slogdet-sign", lambda a: jnp.linalg.slogdet(a)[0], (LA_X,))],
    "stack": [("f32-axis1", lambda x, y: jnp.stack([x, y, x], axis=1),
               (F.reshape(2, 4), G.reshape(2, 4))),
              ("i32", lambda x, y: jnp.stack([x, y]), (I, J)),
              ("bool-last", lambda x, y: jnp.stack([x, y], axis=-1), (B, C))],
})
# ---- end of issue #49's linear algebra block

# ---- issue #49, x.at[i].apply(f) (scatter-apply, lib/interp/ops/indexing.cpp): f once per
# occurrence of an index (APPLY_K: 64 indices into 40, most repeated, some out of bounds, which
# jnp's .at drops), f's bits as JAX's -- XLA's exp and tanh, sin, FMA contraction (v * 1.5 - 0.25
# is one FMA in XLA:CPU's code of the body), a custom_jvp call (relu), int32 and bool bodies,
# windows of rows under clip, lax.scatter_apply on raw indices. (Not log1p: XLA's scalar code of
# the body differs from its vector code there, docs/program-format.md#indexing.)
_AP = np.random.default_rng(4950)
APPLY_X = _AP.uniform(-3, 3, 40).astype(np.float32)
APPLY_K = _AP.integers(-48, 48, 64).astype(np.int32)
APPLY_I = _AP.integers(-20, 20, 40).astype(np.int32)
APPLY_B = _AP.integers(0, 2, 40).astype(bool)
TABLE.update({
    "scatter_apply": [
        ("f32-affine", lambda x, k: x.at[k].apply(lambda v: v * 1.5 - 0.25), (APPLY_X, APPLY_K)),
        ("f32-exp", lambda x, k: x.at[k].apply(lambda v: jnp.exp(v) * 0.5 - 1.25),
         (APPLY_X, APPLY_K)),
        ("f32-tanh-exp", lambda x, k: x.at[k].apply(
            lambda v: jnp.tanh(v) * 1.5 + jnp.exp(-v * v) * 0.25), (APPLY_X, APPLY_K)),
        ("f32-sin", lambda x, k: x.at[k].apply(lambda v: jnp.sin(v) + v * v * 0.125),
         (APPLY_X, APPLY_K)),
        ("f32-relu", lambda x, k: x.at[k].apply(jax.nn.relu), (APPLY_X - 1.0, APPLY_K)),
        ("f32-rows-clip", lambda x, k: x.reshape(8, 5).at[k % 12 - 2].apply(
            lambda v: jnp.cos(v) - v, mode="clip"), (APPLY_X, APPLY_K)),
        ("f32-lax-promise", lambda x, k: lax.scatter_apply(
            x, k[:, None], lambda v: v * v - 1.0, SD1, update_shape=k.shape,
            mode="promise_in_bounds"),
         (APPLY_X, APPLY_K)),
        ("i32", lambda x, k: x.at[k % 40].apply(lambda v: v * 2 - 3 * (v > 0)),
         (APPLY_I, APPLY_K)),
        ("bool", lambda x, k: x.at[k].apply(jnp.logical_not), (APPLY_B, APPLY_K)),
    ],
})
# ---- end of issue #49's scatter-apply block

# ---- issue #49, JAX's GatherScatterMode.ONE_HOT: a scatter's is XLA's plain scatter (an
# out-of-bounds window dropped, lib/interp/ops/indexing.cpp); jnp.take_along_axis(mode="one_hot")
# is a bool one-hot matrix times the operand, a dot_general of two dtypes (lib/interp/dot.cpp:
# JAX's higher dtype of the two). A lax.gather of mode one_hot JAX itself cannot lower.
TABLE.update({
    "scatter_add_one_hot": _gs(["f32", "i32"], scatter1("scatter_add", "one_hot"), ("x", K, "y")),
    "scatter_one_hot": _gs(["f32", "bool"], scatter1("scatter", "one_hot"), ("x", K, "y")),
    "take_along_axis_one_hot": [
        (d, lambda x, k: jnp.take_along_axis(x.reshape(2, 4), k.reshape(2, 4), axis=1,
                                             mode="one_hot"), (X[d][0], K)) for d in ("f32", "i32")]
    + [("f32-axis0", lambda x, k: jnp.take_along_axis(x.reshape(4, 2), k.reshape(4, 2) % 5, axis=0,
                                                      mode="one_hot"), (F, K)),
       ("f32-1d", lambda x, k: jnp.take_along_axis(x, k, axis=0, mode="one_hot"), (LONG[0], K))],
    "dot_general_mixed": [
        ("bool-f32", lambda b, x: lax.dot_general(b.reshape(2, 4), x.reshape(4, 2),
                                                  (((1,), (0,)), ((), ()))), (B, F)),
        ("i32-f32", lambda i, x: lax.dot_general(x.reshape(2, 4), i.reshape(4, 2),
                                                 (((1,), (0,)), ((), ()))), (I, F)),
        ("bool-i32", lambda b, i: lax.dot_general(b.reshape(2, 4), i.reshape(4, 2),
                                                  (((1,), (0,)), ((), ()))), (B, I))],
})
# ---- end of issue #49's one_hot block

# ---- issue #49, cumlogsumexp's bits: its logaddexp runs XLA:CPU's exp and log1p (scalar_ops.hpp)
# in XLA's scan order, JAX's bits on 1.1 * 10^6 random elements (docs/program-format.md); the
# forward scan of F, rows of 40 (XLA's tree beyond 16) of magnitudes 1e-4 to 1e4, both ways.
TABLE["cumlogsumexp"] = TABLE["cumlogsumexp"] + [
    ("f32", lambda x: lax.cumlogsumexp(x), (F,)),
    ("f32-long", lambda x: lax.cumlogsumexp(x, axis=1), (LONG,)),
    ("f32-long-reverse", lambda x: lax.cumlogsumexp(x * 1e-3, axis=1, reverse=True), (LONG,))]
# ---- end of the cumlogsumexp block

# ---- issue #49, atan's two codes on XLA:CPU (lib/interp/ops/float_math.cpp): the C library's
# atan2f in the vectorized loop, XLA's own atan_f32 in scalar code -- an array of rank <= 1 of up to
# 49 elements throughout, the last n % 4 of a longer one (up to 2^16), a scatter-apply's body.
# MATH_X's 32 edges (zeros, subnormals, 1e-7, +-1, 3e38), 49 and 55 of its seeded values, a rank-0
# atan, and x.at[i].apply(jnp.arctan) with repeated indices.
ATAN_X = _R.permutation(MATH_X[32:]).astype(np.float32)
TABLE["atan"] = TABLE["atan"] + [
    ("f32-edges32", lax.atan, (MATH_X[:32],)),
    ("f32-49", lax.atan, (ATAN_X[:49],)),
    ("f32-55-tail", lax.atan, (ATAN_X[:55],)),
    ("f32-rank0", lambda x: lax.atan(x[2]) + lax.atan(x[6]), (ATAN_X[:8],))]
TABLE["scatter_apply"] = TABLE["scatter_apply"] + [
    ("f32-atan", lambda x, k: x.at[k].apply(lambda v: jnp.arctan(v) * 2.5), (APPLY_X, APPLY_K))]
# ---- end of the atan block

# ---- issue #49, dtypes: bf16, f16, i8, u8, i16, u16 (lib/interp/ops/narrow_dtypes.cpp: held as
# float32, each result brought into its dtype as XLA:CPU's convert after each op). Inputs where
# the rounding shows: products and sums between two bf16/f16 values, ties, f16's overflow and
# subnormals; integers that wrap (127 + 9, -128 * -1, 255 * 2, 32767 + 9). No output is inf or
# NaN (the test compares numbers): an overflow shows as an `eq` to inf.
def _narrow(vals, dt):
    return np.array(vals, np.float32).astype(dt)


BF16 = (_narrow([-2.5, 1.0078125, 3.140625, 0.099609375, 255.0, 1e-3, -7.25, 65280.0], jnp.bfloat16),
        _narrow([1.0078125, -1.0078125, 0.3359375, 3.0, -0.25, 1.0e-2, 1.5, 1.0078125], jnp.bfloat16))
F16 = (_narrow([-2.5, 1.0009765625, 3.140625, 0.0999755859375, 255.0, 1e-3, -7.25, 6.1e-5], np.float16),
       _narrow([1.0009765625, -1.0009765625, 0.333251953125, 3.0, -0.25, 1e-2, 1.5, 0.25], np.float16))
I8 = (np.array([-128, -100, -1, 0, 1, 50, 100, 127], np.int8),
      np.array([2, -2, 3, -3, 1, 5, -4, 9], np.int8))
U8 = (np.array([0, 1, 2, 100, 200, 255, 128, 7], np.uint8),
      np.array([2, 255, 3, 200, 1, 5, 128, 9], np.uint8))
I16 = (np.array([-32768, -300, -1, 0, 1, 5000, 300, 32767], np.int16),
       np.array([2, -2, 3, -3, 1, 7, -400, 9], np.int16))
U16 = (np.array([0, 1, 2, 300, 40000, 65535, 32768, 7], np.uint16),
       np.array([2, 65535, 3, 400, 1, 5, 32768, 9], np.uint16))
X.update({"bf16": BF16, "f16": F16, "i8": I8, "u8": U8, "i16": I16, "u16": U16})
HALF, SMALL = ["bf16", "f16"], ["i8", "u8", "i16", "u16"]
NARROW = HALF + SMALL
_NP = {"f32": np.float32, "i32": np.int32, "bool": np.bool_, "bf16": jnp.bfloat16,
       "f16": np.float16, "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16}
# convert_element_type's inputs by source dtype: ties and overflow for the floats (finite in every
# target), values that wrap or saturate for the integers.
CONV = {"f32": np.array([1.00390625, 1.01171875, -3.7, 127.9, 128.5, -129.0, 300.0, -300.0,
                         1e-39, 6e-8, 2.9e-8, 65519.0, 1e10, -0.9, 255.5, -1.0], np.float32),
        "i32": np.array([0, 1, -1, 127, 128, -129, 255, 256, 300, -300, 32767, 32768, 65535,
                         65536, 70000, -70000], np.int32),
        "bool": np.array([True, False] * 8)}
CONV.update({d: np.concatenate([X[d][0], X[d][1]]) for d in NARROW})


def _conv(src, dst):
    f = (lambda x: lax.convert_element_type(x, _NP[dst]))
    x = CONV[src]
    if dst == "f16" and src in ("f32", "i32", "u16"):  # beyond f16's range: inf, shown as 7
        return [(f"{src}-{dst}", lambda x: jnp.where(jnp.abs(f(x)) == jnp.inf, jnp.float16(7), f(x)),
                 (x,))]
    return [(f"{src}-{dst}", f, (x,))]


TABLE.update({
    "add": TABLE["add"] + binary(lax.add, NARROW),
    "sub": TABLE["sub"] + binary(lax.sub, NARROW),
    "mul": TABLE["mul"] + binary(lax.mul, NARROW),
    "div": TABLE["div"] + binary(lax.div, HALF),
    "max": TABLE["max"] + binary(lax.max, NARROW),
    "min": TABLE["min"] + binary(lax.min, NARROW),
    "and": TABLE["and"] + binary(lax.bitwise_and, SMALL),
    "or": TABLE["or"] + binary(lax.bitwise_or, SMALL),
    "xor": TABLE["xor"] + binary(lax.bitwise_xor, SMALL),
    "not": TABLE["not"] + unary(lax.bitwise_not, SMALL),
    "eq": TABLE["eq"] + binary(lax.eq, NARROW),
    "ne": TABLE["ne"] + binary(lax.ne, NARROW),
    "lt": TABLE["lt"] + binary(lax.lt, NARROW),
    "le": TABLE["le"] + binary(lax.le, NARROW),
    "gt": TABLE["gt"] + binary(lax.gt, NARROW),
    "ge": TABLE["ge"] + binary(lax.ge, NARROW),
    "neg": TABLE["neg"] + unary(lax.neg, NARROW),
    "abs": TABLE["abs"] + unary(lax.abs, HALF + ["i8", "i16"]),  # JAX: no unsigned abs
    "sign": TABLE["sign"] + unary(lax.sign, NARROW),
    "square": TABLE["square"] + unary(lax.square, NARROW),
    "exp": TABLE["exp"] + [(d, lambda x: lax.exp(x * 2), (X[d][1],)) for d in HALF],
    "log": TABLE["log"] + [(d, lambda x: lax.log(lax.abs(x)), (X[d][0],)) for d in HALF],
    "tanh": TABLE["tanh"] + unary(lax.tanh, HALF),
    "logistic": TABLE["logistic"] + unary(lax.logistic, HALF),
    "sqrt": TABLE["sqrt"] + [(d, lambda x: lax.sqrt(lax.abs(x)), (X[d][0],)) for d in HALF],
    "rsqrt": [(d, lambda x: lax.rsqrt(lax.abs(x)), (X[d][0],)) for d in HALF],
    "integer_pow": TABLE["integer_pow"] + [(d, lambda x, d=d: lax.integer_pow(x[:7 if d == "bf16" else 4], 3),
                                            (X[d][0],))
                                           for d in HALF]
    + [(f"{d}-neg", lambda x: lax.integer_pow(x, -2), (X[d][1],)) for d in HALF],
    "select_n": TABLE["select_n"] + [(d, lambda x, y: lax.select(x < y, x, y), X[d])
                                     for d in NARROW],
    "reduce_max": TABLE["reduce_max"] + [(d, lambda x: lax.reduce_max(x.reshape(2, 4), (1,)),
                                          (X[d][0],)) for d in NARROW],
    "reduce_min": TABLE["reduce_min"] + [(d, lambda x: lax.reduce_min(x.reshape(2, 4), (0,)),
                                          (X[d][0],)) for d in NARROW],
    # bf16 and f16: each add of XLA's reducer converted to the dtype, in index order; a row of 40
    # (past XLA:CPU's vector width); the integers wrap. jnp.sum converts bf16 to f32 first; the
    # transpose of a broadcast (a bias's gradient) is a reduce_sum of the dtype itself.
    "reduce_sum": TABLE["reduce_sum"] + [(d, lambda x: lax.reduce_sum(x.reshape(2, 4), (1,)),
                                          (X[d][0],)) for d in NARROW]
    + [(f"{d}-axis0", lambda x: lax.reduce_sum(x.reshape(2, 4), (0,)), (X[d][0],)) for d in NARROW]
    + [(f"{d}-32", lambda x: lax.reduce_sum(x[:, :32], (1,)), (LONG.astype(_NP[d]),))
       for d in HALF]
    + [(f"{d}-32-axis0", lambda x: lax.reduce_sum(x[:, 8:].T, (0,)), (LONG.astype(_NP[d]),))
       for d in HALF],
    "reduce_prod": TABLE["reduce_prod"] + [(d, lambda x: lax.reduce_prod(x.reshape(2, 4), (1,)),
                                            (X[d][1],)) for d in NARROW],
    "argmax": TABLE.get("argmax", []) + [(d, lambda x: lax.argmax(x.reshape(2, 4), 1, jnp.int32),
                                          (X[d][0],)) for d in NARROW],
    "reduce_max_empty": TABLE["reduce_max_empty"] + [
        (d, lambda x: lax.reduce_max(x[:0].reshape(0, 2), (0,)) + x[:2],
         (X[d][0],)) for d in SMALL],
    # bf16 x bf16: f32 products and sums, one rounding of the result (or none: f32 preferred)
    "dot_general": TABLE["dot_general"] + [(d, dot(None), X[d]) for d in HALF]
    + [(f"{d}-f32", dot(np.float32), X[d]) for d in HALF],
    # XLA folds the f32 -> bf16 -> f32 convert pair of an op whose result is converted to f32:
    # the op's f32 result, unrounded (mul -> add -> f32: the mul rounded, the add not); not f16's
    "convert_fold": [(d, lambda x, y: (x - y).astype(jnp.float32), X[d]) for d in HALF]
    + [(f"{d}-chain", lambda x, y: (x * y + x).astype(jnp.float32), X[d]) for d in HALF]
    + [(f"{d}-dot", lambda x, y: dot(None)(x, y).astype(jnp.float32), X[d]) for d in HALF],
    # a chain: each op's result rounded (XLA keeps the convert pair between fused ops)
    "chain": [(d, lambda x, y: (x * y + x) * y - y, X[d]) for d in NARROW],
    "shape_ops": [(d, lambda x, y: jnp.concatenate([x.reshape(2, 4).T, y[:4].reshape(4, 1)],
                                                   axis=1)[1:3].reshape(-1)[::-1], X[d])
                  for d in NARROW],
    "literal": [(d, lambda x, d=d: x * _NP[d](3) + _NP[d](1), (X[d][0],)) for d in NARROW],
    "convert_element_type": TABLE.get("convert_element_type", []) + [
        row for src in ["f32", "i32", "bool"] + NARROW
        for dst in ["f32", "i32", "bool"] + NARROW
        if src != dst and (src in NARROW or dst in NARROW) for row in _conv(src, dst)],
})
# More of the float math on bf16/f16 (each op upcast, rounded once), and ops that move values.
# Not exp2 (XLA expands it, exp(x ln 2), before it upcasts: two roundings), nor expm1 (f16 differs)
TABLE.update({
    "log1p": TABLE["log1p"] + [(d, lambda x: lax.log1p(lax.abs(x)), (X[d][0],)) for d in HALF],
    "sin": TABLE["sin"] + unary(lax.sin, HALF),
    "cos": TABLE["cos"] + unary(lax.cos, HALF),
    "erf": TABLE["erf"] + unary(lax.erf, HALF),
    "floor": TABLE["floor"] + unary(lax.floor, HALF),
    "ceil": TABLE["ceil"] + unary(lax.ceil, HALF),
    "is_finite": TABLE["is_finite"] + [(d, lambda x: lax.is_finite(x * x), (X[d][0],))
                                       for d in HALF],
    "clamp": TABLE["clamp"] + [(d, lambda x, y: lax.clamp(y[1], x, y[0]), X[d]) for d in NARROW],
    "pad": [(d, lambda x, y: lax.pad(x, y[0], [(1, 2, 1)]), X[d]) for d in NARROW],
    "dynamic_slice": [(d, lambda x, y: lax.dynamic_update_slice(x, y[:3], (jnp.int32(2),))
                       + lax.dynamic_slice(y, (jnp.int32(1),), (8,)) * 0, X[d])
                      for d in NARROW],
})
# Subnormals: bf16's are float32's (XLA's f32 op flushes them, its convert keeps them), f16's are
# float32 normals.
SUB_BF = (_narrow([1e-39, -2e-39, 1e-38, 3e-39, 1.0, -1e-40, 5e-39, 0.0], jnp.bfloat16),
          _narrow([1e-39, 1e-39, -1e-38, 2.0, 1e-39, 1e-40, 0.5, 1e-39], jnp.bfloat16))
SUB_F16 = np.array([6e-8, 1e-7, -3e-6, 6.1e-5, 1.0, 2e-5, -6e-8, 0.0], np.float16)
TABLE["subnormal"] = [
    ("bf16-add", lax.add, SUB_BF), ("bf16-mul", lax.mul, SUB_BF), ("bf16-max", lax.max, SUB_BF),
    ("bf16-to-f16", lambda x: x.astype(jnp.float16), SUB_BF[:1]),
    ("f32-to-bf16", lambda x: (x.astype(jnp.float32) * 0.5).astype(jnp.bfloat16), SUB_BF[:1]),
    ("f16-mul", lax.mul, (SUB_F16, SUB_F16)),
    ("f16-to-bf16", lambda x: x.astype(jnp.bfloat16), (SUB_F16,))]
# ---- end of the dtypes block

# ---- dtypes2 (issue #49): gather, the scatters, sort, argsort, top_k, the cumulative ops and
# long reduce_sum/reduce_prod of bf16, f16, i8, u8, i16, u16 (lib/interp/ops/narrow_dtypes.cpp's
# dtypes2 block). A repeated scatter index and a scan round at each step in the dtype; a bf16 sum
# over more than 32 elements is XLA:CPU's TreeReductionRewriter (windows of 32, reductions.cpp).
_R2 = np.random.default_rng(4902)
_LO = {"i8": -128, "u8": 0, "i16": -32768, "u16": 0}
_HI = {"i8": 128, "u8": 256, "i16": 32768, "u16": 65536}


def _long(d, scale=1.0):
    """2 x 40 of dtype d: LONG's magnitudes (bf16/f16: divided so no sum reaches f16's inf), random
    integers over the whole range (the sums wrap)."""
    if d in HALF:
        return (LONG * np.float32(scale / 16)).astype(_NP[d])
    return _R2.integers(_LO[d], _HI[d], (2, 40)).astype(_NP[d])


def _nan_as(g, d):
    # a float dtype's NaN (gather's default fill) shown as 7
    return jnp.where(jnp.isnan(g), _NP[d](7), g) if d in HALF else g


NEAR1_H = {d: NEAR1.astype(_NP[d]) for d in HALF}
SMALL_TIES = {d: _R2.integers(0, 3, 40).astype(_NP[d]) for d in NARROW}
LONG_SUM = {d: (_R2.standard_normal((2, 2000)) * 3).astype(np.float32).astype(_NP[d]) for d in HALF}
TABLE.update({
    "gather_clip": TABLE["gather_clip"] + _gs(NARROW, gather1("clip"), ("x", K)),
    "gather_fill_default": TABLE["gather_fill_default"] + [
        (d, (lambda d: lambda x, k: _nan_as(lax.gather(x, k[:, None], GD1, (1,), mode="fill"),
                                            d))(d), (X[d][0], K)) for d in NARROW],
    "gather_take": TABLE["gather_take"] + _gs(NARROW, lambda x, k: jnp.take(x, k % 8 - 4), ("x", K)),
    "gather_rows": TABLE["gather_rows"] + [
        (d, lambda x, k: lax.gather(x.reshape(4, 2), k[:, None], ROWS_G, (1, 2), mode="clip"),
         (X[d][0], K4)) for d in NARROW],
    "scatter": TABLE["scatter"] + _gs(NARROW, scatter1("scatter", "fill"), ("x", K, "y")),
    "scatter_add": TABLE["scatter_add"] + _gs(NARROW, scatter1("scatter_add", "clip"), ("x", K, "y")),
    "scatter_sub": TABLE["scatter_sub"] + _gs(NARROW, scatter1("scatter_sub", "clip"), ("x", K, "y")),
    "scatter_mul": TABLE["scatter_mul"] + _gs(NARROW, scatter1("scatter_mul", "clip"), ("x", K, "y")),
    "scatter_min": TABLE["scatter_min"] + _gs(NARROW, scatter1("scatter_min", "clip"), ("x", K, "y")),
    "scatter_max": TABLE["scatter_max"] + _gs(NARROW, scatter1("scatter_max", "clip"), ("x", K, "y")),
    # 80 updates into 4 places (20 each, in index order, each add rounded / wrapped)
    "scatter_add_order": TABLE["scatter_add_order"] + [
        (d, lambda x: jnp.zeros(4, x.dtype).at[jnp.arange(80) % 4].add(x.reshape(-1)),
         (_long(d),)) for d in NARROW],
    "sort": TABLE["sort"] + [(d, lambda x: jnp.sort(x, axis=1), (_long(d),)) for d in NARROW],
    "argsort": TABLE["argsort"] + [(d, lambda x: jnp.argsort(x), (SMALL_TIES[d],)) for d in NARROW]
    + [(f"{d}-descending", lambda x: jnp.argsort(x, descending=True), (SMALL_TIES[d],))
       for d in NARROW],
    "top_k": TABLE["top_k"] + [(d, lambda x: lax.top_k(x, 5)[0], (_long(d),)) for d in NARROW]
    + [(f"{d}-indices", lambda x: lax.top_k(x, 5)[1], (SMALL_TIES[d],)) for d in NARROW],
    "cumsum": TABLE["cumsum"] + [(d, lambda x: lax.cumsum(x, axis=1), (_long(d),)) for d in NARROW]
    + [(f"{d}-reverse", lambda x: lax.cumsum(x, axis=1, reverse=True), (_long(d),))
       for d in NARROW]
    + [(f"{d}-jnp", lambda x: jnp.cumsum(x, dtype=x.dtype), (_long(d)[0],)) for d in NARROW],
    "cumprod": TABLE["cumprod"] + [(d, lambda x: lax.cumprod(x, axis=1), (NEAR1_H[d],))
                                   for d in HALF]
    + [(f"{d}-reverse", lambda x: lax.cumprod(x, axis=1, reverse=True), (NEAR1_H[d],))
       for d in HALF]
    + [(d, lambda x: lax.cumprod(x, reverse=True), (X[d][1],)) for d in SMALL],
    "cummax": TABLE["cummax"] + [(d, lambda x: lax.cummax(x, axis=1), (_long(d),)) for d in NARROW],
    "cummin": TABLE["cummin"] + [(d, lambda x: lax.cummin(x, axis=1, reverse=True), (_long(d),))
                                 for d in NARROW],
    # one axis of 40, 300 and 2000 (two levels of windows), along the last axis or not
    "reduce_sum": TABLE["reduce_sum"] + [
        (f"{d}-40", lambda x: lax.reduce_sum(x, (1,)), (_long(d),)) for d in HALF]
    + [(f"{d}-300-axis0", lambda x: lax.reduce_sum(x[:, :600].reshape(300, 4), (0,)),
        (LONG_SUM[d],)) for d in HALF]
    + [(f"{d}-2000", lambda x: lax.reduce_sum(x, (1,)), (LONG_SUM[d],)) for d in HALF]
    + [(f"{d}-1x40", lambda x: lax.reduce_sum(x[:1], (0, 1)), (_long(d),)) for d in HALF],
    "reduce_prod": TABLE["reduce_prod"] + [
        (f"{d}-40", lambda x: lax.reduce_prod(x, (1,)), (NEAR1_H[d],)) for d in HALF],
})
# The float math XLA:CPU upcasts per op, exp2 (expanded first), rem and round on bf16/f16: 8 edges
# and 56 random values in [-6, 6]; integer div/rem with zeros and the lowest value over -1; the
# shifts by amounts past the width (and negative ones), popcount and clz on each width.
MATH_H = {d: np.concatenate([np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.25, -7.75], np.float32),
                             _R2.uniform(-6, 6, 56).astype(np.float32)]).astype(_NP[d])
          for d in HALF}
POW_Y = {d: _R2.uniform(-3, 3, 64).astype(np.float32).astype(_NP[d]) for d in HALF}
DIV0 = {"i8": ([-128, 7, -7, 100, 0, -128], [-1, 0, 0, 3, 5, 7]),
        "u8": ([255, 7, 0, 200, 9, 128], [0, 0, 3, 7, 2, 255]),
        "i16": ([-32768, 7, -7, 30000, 0, -32768], [-1, 0, 0, 7, 5, 300]),
        "u16": ([65535, 7, 0, 40000, 9, 32768], [0, 0, 3, 7, 2, 65535])}
DIV0 = {d: (np.array(a, _NP[d]), np.array(b, _NP[d])) for d, (a, b) in DIV0.items()}
SHIFT = {d: np.array([0, 1, 3, 7, 8, 9, 15, 16 if d[0] == "u" else -1], _NP[d]) for d in SMALL}
TABLE.update({
    "pow": TABLE.get("pow", []) + [(d, lambda x, y: lax.pow(lax.abs(x) + x.dtype.type(0.125), y),
                                    (MATH_H[d], POW_Y[d])) for d in HALF],
    "exp2": TABLE.get("exp2", []) + [(d, lax.exp2, (MATH_H[d],)) for d in HALF],
    "round": TABLE["round"] + [(d, lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
                                (MATH_H[d],)) for d in HALF],
    "round_away": TABLE["round_away"] + unary(lax.round, HALF) + [
        (f"{d}-64", lax.round, (MATH_H[d],)) for d in HALF],
    "cbrt": TABLE.get("cbrt", []) + [(d, lax.cbrt, (MATH_H[d],)) for d in HALF],
    "erfc": TABLE.get("erfc", []) + [(d, lax.erfc, (MATH_H[d],)) for d in HALF],
    "erf_inv": TABLE.get("erf_inv", []) + [(d, lambda x: lax.erf_inv(x * x.dtype.type(0.125)),
                                            (MATH_H[d],)) for d in HALF],
    "tan": TABLE.get("tan", []) + [(d, lax.tan, (MATH_H[d],)) for d in HALF],
    "sinh": TABLE.get("sinh", []) + [(d, lax.sinh, (MATH_H[d],)) for d in HALF],
    "cosh": TABLE.get("cosh", []) + [(d, lax.cosh, (MATH_H[d],)) for d in HALF],
    "rem": TABLE["rem"] + [(d, lax.rem, (MATH_H[d], POW_Y[d])) for d in HALF]
    + binary(lax.rem, SMALL) + [(f"{d}-zero", lax.rem, DIV0[d]) for d in SMALL],
    "div": TABLE["div"] + binary(lax.div, SMALL) + [(f"{d}-zero", lax.div, DIV0[d]) for d in SMALL],
    "shift_left": TABLE.get("shift_left", []) + [(d, lax.shift_left, (X[d][0], SHIFT[d]))
                                                 for d in SMALL],
    "shift_right_logical": TABLE.get("shift_right_logical", []) + [
        (d, lax.shift_right_logical, (X[d][0], SHIFT[d])) for d in SMALL],
    "shift_right_arithmetic": TABLE.get("shift_right_arithmetic", []) + [
        (d, lax.shift_right_arithmetic, (X[d][0], SHIFT[d])) for d in SMALL],
    "population_count": TABLE.get("population_count", []) + unary(lax.population_count, SMALL),
    "clz": TABLE.get("clz", []) + unary(lax.clz, SMALL),
})
# Integer dots (exact, wrapped into the dtype, or int32 / float32 by preferred_element_type) and
# convs of bf16/f16 (operands to f32, the f32 conv, rounded once; or f32 with preferred f32).
CONV_X = {d: (_R2.standard_normal((2, 3, 7, 6)) * 2).astype(np.float32).astype(_NP[d]) for d in HALF}
CONV_W = {d: _R2.standard_normal((4, 3, 3, 3)).astype(np.float32).astype(_NP[d]) for d in HALF}


def _conv2d(pref=None, strides=(1, 1), padding="SAME", rhs_dilation=None):
    return lambda x, w: lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=rhs_dilation,
                                                 preferred_element_type=pref)


# u16's products beyond 2^24 as an int32 or float32 result: refused (meshrun holds integers to
# 2^24), so its values here are small
_DOT_I = {d: X[d] if d != "u16" else (X[d][0] % 300, X[d][1] % 300) for d in SMALL}


TABLE.update({
    "dot_general": TABLE["dot_general"] + [(d, dot(None), X[d]) for d in SMALL]
    + [(f"{d}-i32", dot(np.int32), _DOT_I[d]) for d in SMALL]
    + [(f"{d}-f32", dot(np.float32), _DOT_I[d]) for d in SMALL],
    "conv_general_dilated": TABLE.get("conv_general_dilated", [])
    + [(d, _conv2d(), (CONV_X[d], CONV_W[d])) for d in HALF]
    + [(f"{d}-f32", _conv2d(np.float32), (CONV_X[d], CONV_W[d])) for d in HALF]
    + [(f"{d}-strided", _conv2d(strides=(2, 1), padding="VALID", rhs_dilation=(1, 2)),
        (CONV_X[d], CONV_W[d])) for d in HALF],
})
# gather's fill_value given on the six (the param holds the dtype's value)
TABLE["gather_fill"] = TABLE["gather_fill"] + [
    (d, gather1("fill", 1.5 if d in HALF else 5), (X[d][0], K)) for d in NARROW]
# expm1 of bf16 (f16's is refused: tests/jax/dtype_refusals expm1-f16)
TABLE["expm1"] = TABLE.get("expm1", []) + [("bf16", lax.expm1, (MATH_H["bf16"],)),
                                           ("bf16-small", lambda x: lax.expm1(x * x.dtype.type(1e-3)),
                                            (MATH_H["bf16"],))]
# reduce_sum/prod over several axes as XLA's TreeReductionRewriter windows them (a window of 32 on
# an axis longer than 32, of the whole axis on a shorter one), and several short axes of more than
# 32 elements in all (no rewrite: row-major); f16 with two axes longer than 32 is refused.
MULTI = {d: (_R2.standard_normal((2, 40, 40)) * 3).astype(np.float32).astype(_NP[d]) for d in HALF}
MULTI1 = {d: (1 + _R2.standard_normal((40, 3, 40)) * 0.01).astype(np.float32).astype(_NP[d])
          for d in HALF}
TABLE["reduce_sum"] = TABLE["reduce_sum"] + [
    (f"{d}-8x40-both", lambda x: lax.reduce_sum(x[0, :8], (0, 1)), (MULTI[d],)) for d in HALF] + [
    (f"{d}-9x9-both", lambda x: lax.reduce_sum(x[:, :9, :9], (1, 2)), (MULTI[d],)) for d in HALF] + [
    (f"{d}-40x40-both", lambda x: lax.reduce_sum(x, (1, 2)), (MULTI[d],)) for d in ["bf16"]] + [
    (f"{d}-33x33-both", lambda x: lax.reduce_sum(x[0, :33, :33], (0, 1)), (MULTI[d],))
    for d in ["bf16"]]
TABLE["reduce_prod"] = TABLE["reduce_prod"] + [
    (f"{d}-40x3x40-axes02", lambda x: lax.reduce_prod(x, (0, 2)), (MULTI1[d],)) for d in ["bf16"]] + [
    (f"{d}-40x3-axes01", lambda x: lax.reduce_prod(x[:, :, 0], (0, 1)), (MULTI1[d],)) for d in HALF]
# ---- end of the dtypes2 block


# ---- issue #49, uint32 and jax.random (lib/interp/ops/uint32.cpp, ops/random.cpp): uint32 lives
# inside a program only (a case's numbers are float32), so each entry takes float32 or int32 inputs,
# bitcasts them to uint32 (every bit pattern of a finite float32: the sign bit, subnormals), and
# returns a uint32 as int32 halves [hi 16 bits, lo 16 bits] (out32), or as a compare's bool, or a
# float32. jax.random: keys from an input seed, split, fold_in, bits of 8/16/32, uniform, normal,
# bernoulli, and the primitive threefry2x32 itself.
def _u32_patterns():
    pats = np.array([0x00000000, 0x00000001, 0x00000002, 0x0000ffff, 0x00010000, 0x00ffffff,
                     0x01000000, 0x3f800000, 0x7f7fffff, 0x80000000, 0x80000001, 0x9e3779b9,
                     0xdeadbeef, 0xc0000000, 0xff7fffff, 0x12345678], np.uint32)
    rng = np.random.default_rng(4951)
    more = rng.integers(0, 2**32, 16, dtype=np.uint64).astype(np.uint32)
    more = np.where((more & 0x7f800000) == 0x7f800000, more ^ 0x40000000, more)  # no inf, NaN
    return np.concatenate([pats, more]).view(np.float32)


U32X = _u32_patterns()
U32Y = np.roll(U32X, 5)
SEEDS = np.array([0, 1, -1, 42, 7, 123456, -16777216, 16777215], np.int32)
U32F = np.array([-1.5, -0.5, 0.0, -0.0, 3.7, 255.5, 16777217.0, 5e9, 4294967040.0, 4294967296.0,
                 1e-40, 1e10, -3e9, 2147483648.0, 0.999, 65536.0], np.float32)
ERF_INV_X = np.concatenate([
    np.array([0.0, -0.0, 0.5, -0.9, 0.999, -0.9999999, 1e-7, 1e-30, 0.25], np.float32),
    np.random.default_rng(4952).uniform(-1, 1, 55).astype(np.float32)])


def _u(x):
    return lax.bitcast_convert_type(x, jnp.uint32)


def out32(r):
    return jnp.stack([(r >> jnp.uint32(16)).astype(jnp.int32),
                      (r & jnp.uint32(0xffff)).astype(jnp.int32)])


def _u2(op):
    return lambda x, y: out32(op(_u(x), _u(y)))


def _cmp(op):
    return lambda x, y: op(_u(x), _u(y))


def _shift(op):  # amounts 0 .. 63: y's top 6 bits
    return lambda x, y: out32(op(_u(x), _u(y) >> jnp.uint32(26)))


def _key_bits(key):
    return out32(jax.random.bits(key, (2, 4)))


def _threefry(x, y):
    from jax._src.random.threefry2x32 import threefry2x32_p
    a, b = threefry2x32_p.bind(_u(x[0]), _u(y[1]), _u(x), _u(y))
    return jnp.concatenate([out32(a), out32(b)])


UXY = (U32X, U32Y)
TABLE.update({
    "u32_arith": [("add", _u2(lax.add), UXY), ("sub", _u2(lax.sub), UXY),
                  ("mul", _u2(lax.mul), UXY), ("max", _u2(lax.max), UXY),
                  ("min", _u2(lax.min), UXY)],
    "u32_bits": [("and", _u2(lax.bitwise_and), UXY), ("or", _u2(lax.bitwise_or), UXY),
                 ("xor", _u2(lax.bitwise_xor), UXY),
                 ("not", lambda x: out32(lax.bitwise_not(_u(x))), (U32X,)),
                 ("shift_left", _shift(lax.shift_left), UXY),
                 ("shift_right_logical", _shift(lax.shift_right_logical), UXY),
                 ("shift_right_arithmetic", _shift(lax.shift_right_arithmetic), UXY)],
    "u32_compare": [(n, _cmp(op), UXY) for n, op in (("eq", lax.eq), ("ne", lax.ne),
                                                       ("lt", lax.lt), ("le", lax.le),
                                                       ("gt", lax.gt), ("ge", lax.ge))]
    + [("eq-self", lambda x: lax.eq(_u(x), _u(x[::-1])[::-1]), (U32X,))],
    "u32_select_n": [("lt", lambda x, y: out32(lax.select(_u(x) < _u(y), _u(x), _u(y))), UXY),
                     ("i32", lambda x, k: out32(lax.select_n(k % 3, _u(x[:8]), _u(x[8:16]),
                                                             _u(x[16:24]))),
                      (U32X, SEEDS))],
    "u32_convert": [("u32-f32", lambda x: _u(x).astype(jnp.float32), (U32X,)),
                    ("f32-u32", lambda x: out32(x.astype(jnp.uint32)), (U32F,)),
                    ("i32-u32", lambda k: out32(k.astype(jnp.uint32)), (SEEDS,)),
                    ("u32-i32", lambda x: (_u(x) >> jnp.uint32(8)).astype(jnp.int32), (U32X,)),
                    ("u32-bool", lambda x: _u(x).astype(jnp.bool_), (U32X,)),
                    ("bool-u32", lambda b: out32(b.astype(jnp.uint32) * jnp.uint32(0x80000001)),
                     (B,))],
    "u32_bitcast": [("f32-u32-f32", lambda x, y: lax.bitcast_convert_type(
                        _u(x) ^ (_u(y) & jnp.uint32(0x807fffff)), jnp.float32), UXY),
                    ("i32-u32", lambda k: out32(lax.bitcast_convert_type(k, jnp.uint32)),
                     (SEEDS,)),
                    ("u32-i32", lambda x: lax.bitcast_convert_type(_u(x) >> jnp.uint32(9),
                                                                   jnp.int32), (U32X,))],
    "u32_iota": [("u32", lambda x: out32(lax.iota(jnp.uint32, 32) * jnp.uint32(0x01000193)
                                         + _u(x)), (U32X,))],
    # values > 2^24 as literals (jnp.histogram's uint32 literal is one)
    "u32_literal": [("u32", lambda x: out32(_u(x) * jnp.uint32(0x9e3779b9)
                                            + jnp.uint32(0xdeadbeef)), (U32X,))],
    "u32_moves": [("u32", lambda x, y: out32(jnp.concatenate(
        [lax.rev(_u(x).reshape(4, 8).T, (0,)).reshape(-1)[3:19],
         lax.pad(_u(y)[:8], jnp.uint32(0xfffffffe), [(1, 2, 1)]),
         lax.dynamic_slice(_u(y), (jnp.int32(5),), (4,)),
         jnp.broadcast_to(_u(x)[7], (3,))])), UXY)],
    "threefry2x32": [("u32", _threefry, UXY)],
    "random_bits": [("u32", lambda k: _key_bits(jax.random.key(k[3])), (SEEDS,)),
                    ("u16", lambda k: jax.random.bits(jax.random.key(k[5]), (8,), jnp.uint16)
                     .astype(jnp.int32), (SEEDS,)),
                    ("u8", lambda k: jax.random.bits(jax.random.key(k[2]), (8,), jnp.uint8)
                     .astype(jnp.int32), (SEEDS,)),
                    ("PRNGKey", lambda k: _key_bits(jax.random.PRNGKey(k[6])), (SEEDS,))],
    "random_split": [("u32", lambda k: _key_bits(jax.random.split(jax.random.key(k[1]), 3)[2]),
                      (SEEDS,)),
                     ("key_data", lambda k: out32(jax.random.key_data(
                         jax.random.split(jax.random.key(k[4]), (2, 3)))), (SEEDS,)),
                     ("batch", lambda k: out32(jax.random.key_data(jax.vmap(jax.random.split)(
                         jax.random.split(jax.random.key(k[0]), 2)))), (SEEDS,))],
    "random_fold_in": [("u32", lambda k: _key_bits(jax.random.fold_in(jax.random.key(k[3]),
                                                                      k[7])), (SEEDS,)),
                       ("wrap", lambda k, x: out32(jax.random.key_data(jax.random.fold_in(
                           jax.random.wrap_key_data(_u(x[:2])), k[2]))), (SEEDS, U32X))],
    "random_uniform": [("f32", lambda k: jax.random.uniform(jax.random.key(k[3]), (64,)),
                        (SEEDS,)),
                       ("f32-range", lambda k: jax.random.uniform(
                           jax.random.key(k[4]), (4, 8), minval=-3.0, maxval=5.5), (SEEDS,))],
    "random_normal": [("f32", lambda k: jax.random.normal(jax.random.key(k[1]), (64,)),
                       (SEEDS,))],
    "random_bernoulli": [("bool", lambda k: jax.random.bernoulli(jax.random.key(k[5]), 0.3,
                                                                  (32,)), (SEEDS,))],
    "erf_inv": TABLE["erf_inv"] + [("f32", finite(lax.erf_inv), (ERF_INV_X,))],
    # XLA:CPU divides by a broadcast divisor as a multiply by its reciprocal (dropout's
    # x / keep_prob, softmax's normalization); by an elementwise one truly (div-f32 above)
    "div_broadcast": [("f32-literal", lambda x: x / 0.75, (ERF_INV_X,)),
                      ("f32-scalar", lambda x: x / (x[3] + 3.0), (ERF_INV_X,)),
                      ("f32-softmax", lambda x: jax.nn.softmax(x.reshape(8, 8), axis=-1),
                       (ERF_INV_X,))],
})
# ---- end of the uint32 and jax.random block


# ---- uint32's arithmetic beyond the above (division, bit counts, reductions, sort) and what it
# opens: jax.random.permutation and choice without replacement (a sort of random uint32 keys).
def _u4x8(x):
    return _u(x).reshape(4, 8)


def _sorted_u32(stable, keys):
    def f(x, y):
        ops = (_u(x) >> jnp.uint32(29), _u(y), lax.iota(jnp.int32, 32))[:keys] + (
            lax.iota(jnp.int32, 32),)
        r = lax.sort(ops, num_keys=keys, is_stable=stable)
        return jnp.concatenate([out32(r[0]), r[-1][None]])
    return f


TABLE.update({
    "u32_divrem": [("div", _u2(lax.div), UXY), ("rem", _u2(lax.rem), UXY),
                   ("div-small", lambda x, y: out32(lax.div(_u(x), _u(y) >> jnp.uint32(28))),
                    UXY),
                   ("rem-small", lambda x, y: out32(lax.rem(_u(x), _u(y) >> jnp.uint32(28))),
                    UXY)],
    "u32_bitcount": [("population_count", lambda x: out32(lax.population_count(_u(x))),
                      (U32X,)),
                     ("clz", lambda x: out32(lax.clz(_u(x))), (U32X,))],
    "u32_reduce": [("sum", lambda x: out32(lax.reduce_sum(_u4x8(x), (1,))), (U32X,)),
                   ("prod", lambda x: out32(lax.reduce_prod(_u4x8(x), (0,))), (U32X,)),
                   ("max", lambda x: out32(lax.reduce_max(_u4x8(x), (1,))), (U32X,)),
                   ("min", lambda x: out32(lax.reduce_min(_u4x8(x), (0,))), (U32X,)),
                   ("all", lambda x: out32(jnp.stack([jnp.sum(_u(x)), jnp.max(_u(x)),
                                                      jnp.min(_u(x))])), (U32X,)),
                   ("argmax", lambda x: jnp.argmax(_u4x8(x) >> jnp.uint32(30), axis=1), (U32X,)),
                   ("argmin", lambda x: jnp.argmin(_u4x8(x), axis=0), (U32X,))],
    "u32_sort": [("stable", _sorted_u32(True, 1), UXY), ("unstable", _sorted_u32(False, 1), UXY),
                 ("keys2", _sorted_u32(True, 2), UXY),
                 ("argsort", lambda x: jnp.argsort(_u(x)), (U32X,))],
    "random_permutation": [("n", lambda k: jax.random.permutation(jax.random.key(k[3]), 64),
                            (SEEDS,)),
                           ("array", lambda k, x: jax.random.permutation(
                               jax.random.key(k[1]), x), (SEEDS, ERF_INV_X)),
                           ("independent", lambda k, x: jax.random.permutation(
                               jax.random.key(k[4]), x.reshape(8, 8), axis=1, independent=True),
                            (SEEDS, ERF_INV_X)),
                           ("choice", lambda k, x: jax.random.choice(
                               jax.random.key(k[6]), x, (16,), replace=False), (SEEDS, ERF_INV_X))],
})
# ---- end of the uint32 arithmetic and permutation block


# ---- int32 literals of 2^25 or more, held rounded (lib/interp/rounded_int32.cpp): compared with
# or the max / min of an exact int32, moved, converted to float32. jax.random.randint and choice
# with replacement clip their bounds to int32's with them; jnp.iinfo(int32).max is a sentinel.
I32MAX = np.iinfo(np.int32).max
TABLE.update({
    "random_randint": [("i32", lambda k: jax.random.randint(jax.random.key(k[3]), (64,), 0, 100),
                        (SEEDS,)),
                       ("i32-negative", lambda k: jax.random.randint(
                           jax.random.key(k[5]), (4, 8), -50000, -3), (SEEDS,)),
                       ("i32-traced-bounds", lambda k: jax.random.randint(
                           jax.random.key(k[1]), (16,), k[0] - 7, k[4] + 9), (SEEDS,)),
                       ("choice", lambda k, x: jax.random.choice(jax.random.key(k[6]), x, (16,)),
                        (SEEDS, ERF_INV_X))],
    "i32_rounded_literal": [
        ("sentinel-min", lambda k: jnp.min(jnp.where(k > 0, k, I32MAX)), (SEEDS,)),
        ("compare", lambda k: jnp.stack([k < I32MAX, k > -I32MAX - 1, k == I32MAX,
                                         k != jnp.int32(-2**30)]), (SEEDS,)),
        ("clip-f32", lambda k: jnp.clip(k, -2**31, I32MAX).astype(jnp.float32)
         + jnp.float32(I32MAX) * 0 + jnp.int32(I32MAX).astype(jnp.float32), (SEEDS,)),
        # a const (a closed-over array) holding such values
        ("const", lambda k: jnp.stack([
            jnp.minimum(k, np.array([I32MAX, 2**30, 3, 0, I32MAX, 7, -5, 2**26], np.int32)),
            (k < np.array([I32MAX, -2**31, 0, 5, -2**26, 2**27, 1, -1], np.int32)).astype(
                jnp.int32)]), (SEEDS,)),
    ],
})
# ---- end of the rounded int32 literals block


# ---- max and min pooling on the narrow dtypes (lib/interp/ops/windows.cpp): values compared, a
# window of padding only the dtype's identity (-inf / inf, clipped to -1e4 / 1e4 for the case
# file, or the integer's lowest / highest).
def _pool(d, op, init_of):
    def f(x, y):
        z = jnp.concatenate([x, y, x[::-1], y[::-1]]).reshape(4, 8)
        r = lax.reduce_window(z, np.array(init_of(z.dtype), z.dtype), op, (2, 3), (2, 2),
                              [(1, 2), (3, 1)])
        # a case holds finite numbers only: a float window of padding (-inf, inf) shown as -1e4, 1e4
        return jnp.clip(r, -10000, 10000) if jnp.issubdtype(r.dtype, jnp.floating) else r
    return (d, f, X[d])


def _lowest(t):
    return -jnp.inf if jnp.issubdtype(t, jnp.floating) else jnp.iinfo(t).min


def _highest(t):
    return jnp.inf if jnp.issubdtype(t, jnp.floating) else jnp.iinfo(t).max


TABLE.update({
    "reduce_window_max": TABLE["reduce_window_max"] + [_pool(d, lax.max, _lowest) for d in NARROW],
    "reduce_window_min": TABLE["reduce_window_min"] + [_pool(d, lax.min, _highest) for d in NARROW],
    # the generic form (an init that is not the identity): max and min bodies only
    "reduce_window": TABLE["reduce_window"] + [
        (d, lambda x, y: lax.reduce_window(x, x[3], lax.max, (3,), (2,), "SAME"), X[d])
        for d in NARROW],
})
# ---- end of the narrow pooling block


# ---- an int32 beyond 2^24 held as its 32 bits (lib/interp/int32_bits.cpp): a float's bits from
# bitcast_convert_type -- jnp.signbit, jnp.frexp, jnp.ldexp -- and arithmetic with a literal
# beyond 2^24, computed on the bits: the bitwise ops, shifts, add/sub/mul modulo 2^32, signed
# comparisons, max, min, select_n, moves, conversions. Outputs are float32 or small int32.
BITS_F = np.array([1.0, -1.0, 0.0, -0.0, 0.5, -2.5, 3.4e38, -3.4e38, 1e-40, -1e-40, 1.1754944e-38,
                   7.25, -1e-5, 123456.79, 2.0 ** -126, 65504.0], np.float32)
# frexp without the subnormals: XLA:CPU flushes x * 2^23 but not x == 0 there (frexp(1e-40) is
# (0.5, -149) in JAX; meshrun's eq flushes too: x, 0), not followed yet
BITS_NORMAL = BITS_F[np.abs(BITS_F) >= 2.0 ** -126]
BITS_N = np.array([0, 1, -1, 5, -3, 127, -126, 30, -149, 2, 200, -200, 8, -8, 1, 0], np.int32)


def _i(x):
    return lax.bitcast_convert_type(x, jnp.int32)


def _f(b):
    return lax.bitcast_convert_type(b, jnp.float32)


def _finite(v):  # the case format holds no inf or NaN
    return jnp.where(jnp.isfinite(v), v, jnp.float32(-7))


def _sortable(x):
    """A float's bits as an int32 that orders as the float: the sign's mask flips the rest."""
    b = _i(x)
    key = b ^ ((b >> 31) & jnp.int32(0x7fffffff))
    rank = jnp.sum((key[:, None] < key[None, :]).astype(jnp.int32), axis=1)
    hi = jnp.maximum(key, jnp.roll(key, 3))
    lo = jnp.minimum(key, jnp.where(key > 0, key, -key))
    back = lambda k: _f(k ^ ((k >> 31) & jnp.int32(0x7fffffff)))  # noqa: E731
    return jnp.stack([rank.astype(jnp.float32), _finite(back(hi)), _finite(back(lo)),
                      ((key >= jnp.roll(key, 1)) & (key != 0)).astype(jnp.float32)])


def _bit_ops(x):
    b = _i(x)
    return jnp.stack([
        ((b >> 23) & 0xff).astype(jnp.float32), (b & 0x7fffff).astype(jnp.float32),
        (b < 0).astype(jnp.float32), lax.shift_right_logical(b, 16).astype(jnp.float32),
        _finite(_f(b ^ jnp.int32(-2**31))), _finite(_f(b + jnp.int32(1 << 23))),
        _finite(_f(lax.shift_left(b, 1))), _finite(_f(b * 3 + jnp.int32(-1640531527))),
        _finite(_f(~b)), _finite(_f(b - jnp.int32(2**30))), b.astype(jnp.float32),
        (b == _i(-x)).astype(jnp.float32)])


TABLE.update({
    "i32_bits": [
        ("signbit", lambda x: jnp.signbit(x), (BITS_F,)),
        ("frexp-mantissa", lambda x: jnp.frexp(x)[0], (BITS_NORMAL,)),
        ("frexp-exponent", lambda x: jnp.frexp(x)[1], (BITS_NORMAL,)),
        ("ldexp", lambda x, n: _finite(jnp.ldexp(x, n)), (BITS_F, BITS_N)),
        ("sortable", _sortable, (BITS_F,)),
        ("bit-ops", _bit_ops, (BITS_F,)),
        # randint over int32's whole range, its draws shifted back within 2^24
        ("randint-full", lambda k: jax.random.randint(jax.random.key(k[3]), (16,), -2**31,
                                                      2**31 - 1) >> 8, (SEEDS,)),
        # argmin over sentinels (the literal enters the where's jit as its bits): which of two
        # integers of one float is smaller
        ("sentinel-argmin", lambda k: jnp.argmin(jnp.where(k > 0, k, I32MAX)).astype(jnp.int32),
         (SEEDS,)),
        # a hash of int32 values with multipliers beyond 2^24, back to small ints
        ("hash", lambda k: ((k * jnp.int32(-1640531535) + jnp.int32(374761393)) >> 24)
         .astype(jnp.float32), (SEEDS,)),
    ],
})
# ---- end of the int32 bits block


def max_normwise(name):
    """How far a case's outputs may move from CPU to CPU: MAX_NORMWISE for float32, a few units
    of the last place for the half types, which XLA computes natively where the CPU has
    AVX512-FP16 (an f16 `x * y + x` rounds once there, twice elsewhere: chain-f16)."""
    import re  # here, not above: the entries' files name the source lines of the table
    half = re.search(r"-(bf16|f16)(-|\.)", name)
    return MAX_NORMWISE if half is None else 4 * {"f16": 2.0**-10, "bf16": 2.0**-7}[half.group(1)]


def main():
    target = os.path.join(HERE, "dtype_rules")
    if "--check" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            write_all(tmp)
            stale = []
            for n in sorted(os.listdir(tmp)):
                old = os.path.join(target, n)
                if not os.path.exists(old):
                    stale.append(n)
                    continue
                old, text = open(old).read(), open(os.path.join(tmp, n)).read()
                if old == text:
                    continue
                # A case whose inputs are the same and whose outputs moved by rounding only: XLA's
                # code differs by CPU (meshrun_export.compare). A program file must not change.
                d = normwise_apart(old, text) if n.endswith(".case.json") else None
                if d is None or d > max_normwise(n):
                    stale.append(n)
                else:
                    print(f"ok: tests/jax/dtype_rules/{n}: JAX's outputs {d:.1e} of their "
                          f"magnitude from the committed ones (XLA's code differs by CPU)")
            stale += [n for n in sorted(os.listdir(target)) if not os.path.exists(os.path.join(tmp, n))]
            if stale:
                print("tests/jax/dtype_rules is stale: " + ", ".join(stale))
                sys.exit(1)
            print(f"tests/jax/dtype_rules: {len(os.listdir(tmp)) // 2} entries as JAX computes them")
        return
    names = write_all(target)
    print(f"wrote {len(names)} entries to {target}")


if __name__ == "__main__":
    main()
