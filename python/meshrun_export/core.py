"""Walks jaxpr objects (eqn.primitive, eqn.params, avals, consts) into meshrun's program format
(docs/program-format.md). Never looks at printed text."""
import math
import os

import numpy as np

import jax
import jax.extend.core as jcore
from jax._src import source_info_util
from jax._src.core import jaxprs_in_params as _jaxprs_in_params

FORMAT_VERSION = 1
EXPORTER = "meshrun_export 1"


class Unsupported(Exception):
    """The program uses something meshrun cannot run; the message names it and its source line."""

    located = False


# ------------------------------------------------------------------------------------------
# Types and values

_DTYPES = {"float32": "f32", "int32": "i32", "bool": "bool",
           # issue #49, dtypes: the ones float32 holds exactly (meshrun keeps every value as one)
           "bfloat16": "bf16", "float16": "f16", "int8": "i8", "uint8": "u8", "int16": "i16",
           "uint16": "u16",
           # issue #49, jax.random: uint32 held as its bits (a key<fry>[S] is a uint32[S, 2])
           "uint32": "u32"}
_ONLY = "only float32, int32, bool, bfloat16, float16, int8, uint8, int16, uint16, uint32"


def dtype_name(dt, where="value"):
    if _is_extended(dt):  # a PRNG key (key<fry>) or another of JAX's extended dtypes
        kind = "key-typed array" if "key<" in str(dt) else "extended dtype"
        raise Unsupported(f"{kind} (dtype {dt}) as {where} is not supported "
                          f"({_ONLY})")
    try:
        name = np.dtype(dt).name
    except TypeError:
        raise Unsupported(f"dtype {dt} of {where} is not supported ({_ONLY})")
    if name not in _DTYPES:
        raise Unsupported(f"dtype {name} of {where} is not supported ({_ONLY})")
    return _DTYPES[name]


def _is_extended(dt):
    try:
        return bool(jax.dtypes.issubdtype(dt, jax.dtypes.extended))
    except Exception:  # noqa: BLE001 - not a dtype JAX knows
        return False


def dim(d):
    """A Dim: an int, or the dimension expression's text in JAX's syntax."""
    if isinstance(d, (int, np.integer)):
        return int(d)
    if hasattr(d, "is_constant") and d.is_constant:  # a _DimExpr that is a constant
        return int(d)
    return str(d)


def shape(s):
    return [dim(d) for d in s]


def float_text(v):
    """float32 with 9 significant digits (reads back to the same bits); non-finite as strings."""
    f = float(np.float32(v))
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return RawNumber(format(f, ".9g"))


class RawNumber(str):
    """A JSON number already formatted (written without quotes)."""


def scalar_value(v, dt):
    if dt in ("f32", "bf16", "f16"):
        return float_text(v)
    if dt == "bool":
        return bool(v)
    return int(v)


# ------------------------------------------------------------------------------------------
# Params, primitive by primitive (the table of docs/program-format.md)

_BINARY = {"add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "and",
           "or", "xor", "add_any", "eq", "ne", "lt", "le", "gt", "ge", "select_n", "clamp"}
_UNARY = {"neg", "abs", "sign", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic",
          "erf", "erfc", "erf_inv", "sqrt", "rsqrt", "cbrt", "square", "sin", "cos", "floor", "ceil",
          "is_finite", "not", "stop_gradient", "copy", "copy_p"}
# Issue #49, elementwise: the float math family (lib/interp/ops/float_math.cpp) and the int32 bit
# ops (lib/interp/ops/bit_ops.cpp), none with a param.
_MATH_ELEMENTWISE = {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
                     "lgamma", "digamma", "population_count", "clz", "shift_left",
                     "shift_right_logical", "shift_right_arithmetic"}
# Params JAX carries that do not change the value on meshrun (shardings, layouts, accuracy
# hints, weak types): dropped when they hold their default.
_IGNORED_DEFAULTS = {"out_sharding": None, "sharding": None, "accuracy": None,
                     "out_dtype": None, "precision": None, "weak_type": None,
                     "axis_index_groups": None, "dimensions": None}
_IGNORED_ANY = {"weak_type", "axis_size", "precision", "out_sharding", "sharding",
                "newly_manual_axes", "symbolic_zeros"}
# Old JAX names of the same primitives.
_RENAMES = {"pjit": "jit", "psum2": "psum_invariant", "custom_vjp_call_jaxpr": "custom_vjp_call",
            "psum_scatter": "reduce_scatter",
            # jax.checkpoint's primitive is remat_p, named "remat2" (JAX 0.4 to 0.10.2 at least)
            "remat2": "checkpoint", "remat": "checkpoint"}
_REDUCTIONS = {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
               "reduce_or"}
_COLLECTIVE_AXES = {"psum", "psum_invariant", "pmean", "pvary", "pcast", "all_gather",
                    "all_gather_invariant", "reduce_scatter", "ppermute", "all_to_all",
                    "axis_index", "pmax", "pmin"}
# Collectives that carry axis_index_groups into the file (issue #50): the rest refuse them
# (JAX itself raises NotImplementedError for psum_invariant's and all_gather_invariant's).
_GROUPED = {"psum", "pmean", "pmax", "pmin", "all_gather", "reduce_scatter", "all_to_all"}
# Calls whose value is their body's (docs: "Wrappers whose value is their body's").
_CALLS = {"closed_call", "call", "core_call"}
# ops/cumulative.cpp, ops/windows.cpp
_CUMULATIVE = {"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"}
_WINDOWS = {"reduce_window", "reduce_window_sum", "reduce_window_max", "reduce_window_min",
            "select_and_scatter_add", "select_and_gather_add"}
# Placement: the value unchanged (n operands -> n results); only "to" kept, for traces.
_PLACEMENT = {"reshard", "device_put", "sharding_constraint", "mesh_cast", "sharding_cast",
              "optimization_barrier", "name"}  # name: checkpoint_name's tag, for remat policies


def axis_names(a):
    if a is None:
        return []
    if isinstance(a, (tuple, list)):
        return [str(x) for x in a]
    if isinstance(a, (set, frozenset)):
        return sorted(str(x) for x in a)
    return [str(a)]


def check_reduced(p, where):
    for kind in ("unreduced", "reduced"):
        if getattr(p, kind, None):
            raise Unsupported(f"{where} {p} has {kind} axes "
                              f"{sorted(str(a) for a in getattr(p, kind))} (not supported)")


def spec(p, where="a PartitionSpec"):
    """PartitionSpec -> [null | axis | [axes]] (P() is []). Refuses unreduced / reduced axes
    (a value that is a pending sum over them, which the format cannot hold)."""
    check_reduced(p, where)
    out = []
    for entry in tuple(p):
        if entry is None:
            out.append(None)
        elif isinstance(entry, str):
            out.append(entry)
        else:
            names = [str(x) for x in entry]
            out.append(names[0] if len(names) == 1 else names)
    return out


def names_to_spec(names, ndim):
    """Old JAX's in_names ({dim: (axes,)}) -> a Spec."""
    out = [None] * (max(names) + 1 if names else 0)
    for d, axes in names.items():
        axes = [str(a) for a in axes]
        out[d] = axes[0] if len(axes) == 1 else axes
    return out


class Walker:
    def __init__(self):
        self.sources = []  # the user's source line of each enclosing equation

    # -- errors
    def fail(self, eqn, msg):
        raise Unsupported(msg)

    def locate(self, err, eqn):
        """Adds the equation's source line (or its nearest enclosing one's) to an error."""
        if not err.located:
            src = ((source(eqn) if eqn is not None else None)
                   or next((s for s in reversed(self.sources) if s and "definition" not in s),
                           None)
                   or next((s for s in reversed(self.sources) if s), None))
            if src:
                err.args = (f"{err.args[0]} at {src}",)
                err.located = True
        return err

    # -- jaxprs
    def closed(self, cj):
        return self.jaxpr(cj.jaxpr, cj.consts)

    def jaxpr(self, j, consts=()):
        self.sources.append(definition(j))
        try:
            return self._jaxpr(j, consts)
        except Unsupported as err:
            # an invar's or a const's type: no equation to name, the function's definition
            raise self.locate(err, None) from None
        finally:
            self.sources.pop()

    def _jaxpr(self, j, consts):
        ids = {}

        def var(v):
            if id(v) in ids:
                raise Unsupported("a jaxpr defines a var twice")
            ids[id(v)] = (len(ids), v)
            return {"id": ids[id(v)][0], "type": vtype(v.aval)}

        def atom(a, eqn=None):
            if isinstance(a, jcore.Literal):
                dt = dtype_name(np.asarray(a.val).dtype if not hasattr(a, "aval")
                                else a.aval.dtype, "a literal")
                val = np.asarray(a.val)
                if val.shape != ():
                    self.fail(eqn, "a non-scalar literal")
                return {"lit": scalar_value(val, dt), "dtype": dt}
            if id(a) not in ids:
                raise Unsupported("a var used before it is defined")
            return {"var": ids[id(a)][0]}

        out = {"invars": [var(v) for v in j.invars],
               "constvars": [var(v) for v in j.constvars],
               "consts": [const(c) for c in consts],
               "eqns": [],
               "outvars": None}
        if len(consts) != len(j.constvars):
            # an open jaxpr with constvars: nothing holds their values
            raise Unsupported(f"a jaxpr has {len(j.constvars)} constvars and "
                              f"{len(consts)} values")
        for e in j.eqns:
            src = source(e)
            self.sources.append(src)
            try:
                ins = [atom(a, e) for a in e.invars]
                self._keep = None
                prim, params = self.params(e)
                keep, self._keep = self._keep, None  # set by this eqn's params only
                if keep is not None:  # custom_linear_solve: the solve's operands only
                    ins = [ins[i] for i in keep]
                rec = {"primitive": prim, "params": params, "in": ins,
                       "out": [var(v) for v in e.outvars]}
            except Unsupported as err:
                raise self.locate(err, e) from None
            finally:
                self.sources.pop()
            if src:
                rec["source"] = src
            out["eqns"].append(rec)
        out["outvars"] = [atom(a) for a in j.outvars]
        return out

    def sub(self, e, j):
        if isinstance(j, jcore.ClosedJaxpr):
            return self.closed(j)
        if isinstance(j, jcore.Jaxpr):
            return self.jaxpr(j)
        self.fail(e, f"{e.primitive.name}: its jaxpr is a {type(j).__name__}")

    # -- params
    def params(self, e):
        name = _RENAMES.get(e.primitive.name, e.primitive.name)
        p = dict(e.params)
        out = {}

        def take(key, conv=lambda x: x, default=KeyError):
            if key in p:
                out_v = conv(p.pop(key))
            elif default is KeyError:
                self.fail(e, f"{name}: JAX gave no param '{key}'")
            else:
                out_v = default
            return out_v

        if name in _BINARY or name in _UNARY or name in _MATH_ELEMENTWISE:
            pass
        elif name == "round":
            out["rounding_method"] = take("rounding_method", int)
        elif name == "reduce_precision":
            out["exponent_bits"] = take("exponent_bits", int)
            out["mantissa_bits"] = take("mantissa_bits", int)
        elif name == "integer_pow":
            out["y"] = take("y", int)
        elif name == "convert_element_type":
            out["new_dtype"] = take("new_dtype", lambda d: dtype_name(d, "convert_element_type"))
        elif name == "broadcast_in_dim":
            out["shape"] = take("shape", shape)
            out["broadcast_dimensions"] = take("broadcast_dimensions", ints)
        elif name == "reshape":
            out["new_sizes"] = take("new_sizes", shape)
            if p.get("dimensions") is not None:
                self.fail(e, "reshape with dimensions (a transposing reshape)")
        elif name in ("squeeze", "expand_dims"):
            out["dimensions"] = take("dimensions", ints)
        elif name == "transpose":
            out["permutation"] = take("permutation", ints)
        elif name in _REDUCTIONS:
            out["axes"] = take("axes", ints)
        elif name in ("argmax", "argmin"):
            out["axes"] = take("axes", ints)
            out["index_dtype"] = take("index_dtype", lambda d: dtype_name(d, name))
        elif name == "iota":
            out["dtype"] = take("dtype", lambda d: dtype_name(d, "iota"))
            out["shape"] = take("shape", shape)
            out["dimension"] = take("dimension", int)
        elif name == "concatenate":
            out["dimension"] = take("dimension", int)
        elif name == "split":  # concatenate's transpose under jax.grad
            out["sizes"] = take("sizes", shape)
            out["axis"] = take("axis", int)
        elif name == "slice":
            out["start_indices"] = take("start_indices", shape)
            out["limit_indices"] = take("limit_indices", shape)
            out["strides"] = take("strides", lambda s: None if s is None else shape(s))
        elif name == "dynamic_slice":
            out["slice_sizes"] = take("slice_sizes", shape)
        elif name == "dynamic_update_slice":
            pass
        elif name == "gather":
            dn = take("dimension_numbers")
            out["offset_dims"] = ints(dn.offset_dims)
            out["collapsed_slice_dims"] = ints(dn.collapsed_slice_dims)
            out["start_index_map"] = ints(dn.start_index_map)
            out["operand_batching_dims"] = ints(getattr(dn, "operand_batching_dims", ()))
            out["start_indices_batching_dims"] = ints(getattr(dn, "start_indices_batching_dims",
                                                              ()))
            out["slice_sizes"] = take("slice_sizes", shape)
            out["indices_are_sorted"] = take("indices_are_sorted", bool, False)
            out["unique_indices"] = take("unique_indices", bool, False)
            out["mode"] = take("mode", lambda m: gather_mode(self, e, m))
            fill = take("fill_value", default=None)
            out["fill_value"] = None if fill is None else scalar_value(
                np.asarray(fill).item(), dtype_name(e.invars[0].aval.dtype, "gather"))
        elif name in _SCATTERS:
            update = take("update_jaxpr", default=None)
            consts = take("update_consts", default=())
            if name == "scatter" and update is not None:
                # x.at[i].apply(f), lax.scatter_apply: f's body, run elementwise by meshrun
                name = "scatter-apply"
                check_apply_body(self, e, update, consts)
                out["update_jaxpr"] = self.sub(e, update)
            else:
                check_scatter_update(self, e, name, update, consts)
            dn = take("dimension_numbers")
            out["update_window_dims"] = ints(dn.update_window_dims)
            out["inserted_window_dims"] = ints(dn.inserted_window_dims)
            out["scatter_dims_to_operand_dims"] = ints(dn.scatter_dims_to_operand_dims)
            out["operand_batching_dims"] = ints(getattr(dn, "operand_batching_dims", ()))
            out["scatter_indices_batching_dims"] = ints(
                getattr(dn, "scatter_indices_batching_dims", ()))
            out["indices_are_sorted"] = take("indices_are_sorted", bool, False)
            out["unique_indices"] = take("unique_indices", bool, False)
            out["mode"] = take("mode", lambda m: gather_mode(self, e, m))
        elif name == "pad":
            out["padding_config"] = take("padding_config",
                                         lambda c: [[dim(x) for x in t] for t in c])
        elif name == "dot_general":
            (lc, rc), (lb, rb) = take("dimension_numbers")
            out["contracting"] = [ints(lc), ints(rc)]
            out["batch"] = [ints(lb), ints(rb)]
            out["preferred_element_type"] = take(
                "preferred_element_type",
                lambda d: None if d is None else dtype_name(d, "dot_general"), None)
        # -- cumulative, sorting, windows (ops/cumulative.cpp, ops/sorting.cpp, ops/windows.cpp)
        elif name in _CUMULATIVE:
            out["axis"] = take("axis", int)
            out["reverse"] = take("reverse", bool)
        elif name == "rev":
            out["dimensions"] = take("dimensions", ints)
        elif name == "sort":
            out["dimension"] = take("dimension", int)
            out["is_stable"] = take("is_stable", bool)
            out["num_keys"] = take("num_keys", int)
        elif name == "top_k":
            out["k"] = take("k", int)
            out["axis"] = take("axis", int, len(e.invars[0].aval.shape) - 1)
        elif name == "approx_top_k":
            out["k"] = take("k", int)
            out["reduction_dimension"] = take("reduction_dimension", int)
            out["is_max_k"] = take("is_max_k", bool)
            out["aggregate_to_topk"] = take("aggregate_to_topk", bool)
            # the TPU's search parameters: exact on CPU, they change no value there
            p.pop("recall_target", None)
            p.pop("reduction_input_size_override", None)
        elif name in _WINDOWS:
            out["window_dimensions"] = take("window_dimensions", ints)
            out["window_strides"] = take("window_strides", ints)
            out["padding"] = take("padding", lambda c: [[int(lo), int(hi)] for lo, hi in c])
            if name not in ("select_and_scatter_add",):
                out["base_dilation"] = take("base_dilation", ints)
                out["window_dilation"] = take("window_dilation", ints)
            if name in ("select_and_scatter_add", "select_and_gather_add"):
                out["select_prim"] = take("select_prim", lambda q: str(q.name))
            if name == "reduce_window":
                if p.pop("consts", ()):
                    self.fail(e, "reduce_window whose body closes over values")
                out["jaxpr"] = self.sub(e, take("jaxpr"))
        elif name == "dim_as_value":
            out["dim"] = take("dim", dim)
            p.pop("dtype", None)
        elif name == "jit":
            out["name"] = take("name", str, "")
            out["jaxpr"] = self.sub(e, take("jaxpr"))
            for k in ("in_shardings", "out_shardings", "in_layouts", "out_layouts",
                      "donated_invars", "ctx_mesh", "keep_unused", "inline",
                      "compiler_options_kvs", "resource_env"):
                p.pop(k, None)
        elif name in ("custom_jvp_call", "custom_vjp_call"):
            cj = p.pop("call_jaxpr", None)
            if cj is None:
                cj = p.pop("fun_jaxpr", None)
            if cj is None:
                self.fail(e, f"{name} without call_jaxpr")
            dbg = getattr(getattr(cj, "jaxpr", cj), "debug_info", None)
            fname = getattr(dbg, "func_name", None) if dbg is not None else None
            if fname:
                out["name"] = str(fname).split(" ")[0]
            out["call_jaxpr"] = self.sub(e, cj)
            p.clear()  # the rules (jvp_jaxpr_fun, fwd/bwd, out_trees, num_consts) are not kept
        elif name == "shard_map":
            mesh = take("mesh")
            out["mesh"] = [[str(a), int(s)] for a, s in zip(mesh.axis_names, mesh.axis_sizes)]
            manual = p.pop("newly_manual_axes", None)
            if manual is None:
                manual = set(mesh.axis_names) - set(p.pop("auto", frozenset()))
            if not set(manual) <= set(mesh.axis_names):
                self.fail(e, f"shard_map manual over {sorted(manual)}, not all axes of "
                             f"{list(mesh.axis_names)}")
            if set(manual) != set(mesh.axis_names):
                # Partial (axis_names= a subset): the others stay automatic. Only then written,
                # in mesh order, so that the exports of full shard_maps do not change.
                out["manual_axes"] = [str(a) for a in mesh.axis_names if a in set(manual)]
            p.pop("auto", None)
            if "in_specs" in p:
                out["in_specs"] = [spec(s, "shard_map in_specs") for s in p.pop("in_specs")]
                out["out_specs"] = [spec(s, "shard_map out_specs") for s in p.pop("out_specs")]
            else:  # JAX < 0.6: in_names / out_names, dicts {dim: axes}
                out["in_specs"] = [names_to_spec(n, 0) for n in p.pop("in_names")]
                out["out_specs"] = [names_to_spec(n, 0) for n in p.pop("out_names")]
            vma = p.pop("check_vma", None)
            if vma is None:
                vma = p.pop("check_rep", True)
            out["check_vma"] = bool(vma)
            out["jaxpr"] = self.sub(e, take("jaxpr"))
        elif name == "scan":
            out["length"] = take("length", int)
            out["reverse"] = take("reverse", bool)
            out["num_consts"] = take("num_consts", int)
            out["num_carry"] = take("num_carry", int)
            out["jaxpr"] = self.sub(e, take("jaxpr"))
            for k in ("unroll", "linear", "_split_transpose"):  # change no value
                p.pop(k, None)
        elif name == "while":
            out["cond_nconsts"] = take("cond_nconsts", int)
            out["body_nconsts"] = take("body_nconsts", int)
            out["cond_jaxpr"] = self.sub(e, take("cond_jaxpr"))
            out["body_jaxpr"] = self.sub(e, take("body_jaxpr"))
        elif name == "cond":
            branches = take("branches")
            out["branches"] = [self.sub(e, b) for b in branches]
            p.pop("linear", None)  # older JAX: changes no value
            # lax.platform_dependent's cond: which platforms each branch is for, used by JAX to
            # prune branches when lowering; the index (platform_index) chooses: no value changes
            p.pop("branches_platforms", None)
        elif name == "checkpoint":
            out["jaxpr"] = self.sub(e, take("jaxpr"))
            for k in ("prevent_cse", "differentiated", "policy"):
                p.pop(k, None)
        elif name in _CALLS:
            out["call_jaxpr"] = self.sub(e, take("call_jaxpr"))
            p.pop("name", None)
        elif name == "debug_print":  # jax.debug.print: no result; meshrun prints nothing
            p.clear()
        elif name in _PLACEMENT:
            p.pop("name", None)  # checkpoint_name's tag
            if len(e.invars) != len(e.outvars):
                self.fail(e, f"{name} with {len(e.invars)} operands and {len(e.outvars)} "
                             "results")
            targets = []
            for k in ("dst_sharding", "sharding", "devices", "dst", "to"):
                v = p.pop(k, None)
                if v is None:
                    continue
                for t in (v if isinstance(v, (tuple, list)) else (v,)):
                    targets.append(placement_text(t, name))
            if targets and all(t is not None for t in targets):
                out["to"] = targets[0] if len(set(targets)) == 1 else "; ".join(targets)
            p.clear()  # meshes, layouts, copy semantics, sources: no value changes
        elif name in _COLLECTIVE_AXES:
            axes = p.pop("axes", None)
            if axes is None:
                axes = p.pop("axis_name", None)
            out["axes"] = axis_names(axes)
            groups = p.pop("axis_index_groups", None)
            if groups is not None:
                if name not in _GROUPED:
                    self.fail(e, f"{name} with axis_index_groups")
                out["axis_index_groups"] = [[int(i) for i in g] for g in groups]
            if name == "pcast":
                to = p.pop("to", "varying")
                if to != "varying":
                    self.fail(e, f"pcast to {to}")
            elif name in ("all_gather", "all_gather_invariant"):
                out["all_gather_dimension"] = take("all_gather_dimension", int)
                out["tiled"] = take("tiled", bool)
            elif name == "reduce_scatter":
                out["scatter_dimension"] = take("scatter_dimension", int)
                out["tiled"] = take("tiled", bool)
            elif name == "ppermute":
                out["perm"] = take("perm", lambda pp: [[int(s), int(d)] for s, d in pp])
            elif name == "all_to_all":
                out["split_axis"] = take("split_axis", int)
                out["concat_axis"] = take("concat_axis", int)
                out["tiled"] = take("tiled", bool)
        # ---- issue #49: conv_general_dilated and the rev of its gradient (lib/interp/ops/conv.cpp)
        elif name == "conv_general_dilated":
            out["window_strides"] = take("window_strides", ints)
            out["padding"] = take("padding", lambda ps: [[int(a), int(b)] for a, b in ps])
            out["lhs_dilation"] = take("lhs_dilation", ints)
            out["rhs_dilation"] = take("rhs_dilation", ints)
            dn = take("dimension_numbers")
            out["dimension_numbers"] = {"lhs_spec": ints(dn.lhs_spec),
                                        "rhs_spec": ints(dn.rhs_spec),
                                        "out_spec": ints(dn.out_spec)}
            out["feature_group_count"] = take("feature_group_count", int)
            out["batch_group_count"] = take("batch_group_count", int)
            pet = take("preferred_element_type", default=None)
            if pet is not None:
                out["preferred_element_type"] = dtype_name(pet, name)
        elif name == "rev":
            out["dimensions"] = take("dimensions", ints)
        # ---- end of issue #49's conv block
        # ---- issue #49: linear algebra (lib/interp/ops/linalg.cpp)
        elif name in ("cholesky", "lu"):
            pass
        elif name == "triangular_solve":
            for k in ("left_side", "lower", "transpose_a", "unit_diagonal"):
                out[k] = take(k, bool)
            if take("conjugate_a", bool, False) and np.iscomplexobj(
                    np.empty((), e.invars[0].aval.dtype)):
                self.fail(e, "triangular_solve with conjugate_a on complex operands")
        elif name == "stack":
            out["axis"] = take("axis", int)
        elif name == "platform_index":  # lax.platform_dependent (jnp.diagonal, det, slogdet)
            out["platforms"] = take("platforms", lambda ps: [
                None if x is None else [str(q) for q in x] for x in ps])
            p.pop("has_default", None)  # older JAX: the None entry says it
        elif name == "lu_pivots_to_permutation":
            out["permutation_size"] = take("permutation_size", int)
        elif name == "custom_linear_solve":
            # Its value is the `solve` jaxpr on the solve's consts and b (JAX's impl); the other
            # jaxprs serve differentiation, done before the export. Operands: matvec, vecmat,
            # solve, transpose_solve consts, then b.
            lens = take("const_lengths")
            jaxprs = take("jaxprs")
            start = lens.matvec + lens.vecmat
            ops = len(e.invars)
            b0 = start + lens.solve + lens.transpose_solve
            out["jaxpr"] = self.sub(e, jaxprs.solve)  # (walks eqns: _keep after it)
            self._keep = list(range(start, start + lens.solve)) + list(range(b0, ops))
        # ---- end of issue #49's linear algebra block
        # ---- issue #49, jax.random (lib/interp/ops/random.cpp): key<fry> arrays as uint32[..., 2]
        elif name in ("random_seed", "random_wrap"):
            impl = take("impl")
            tag = getattr(impl, "tag", None) or getattr(impl, "name", None)
            if tag != "fry":
                self.fail(e, f"{name}: PRNG implementation {tag or impl} (meshrun runs JAX's "
                             f"default, threefry: 'fry')")
            out["impl"] = "fry"
        elif name in ("random_unwrap", "random_fold_in", "threefry2x32", "bitcast_convert_type"):
            if name == "bitcast_convert_type":
                out["new_dtype"] = take("new_dtype", lambda d: dtype_name(d, name))
        elif name == "random_split":
            out["shape"] = take("shape", shape)
        elif name == "random_bits":
            out["bit_width"] = take("bit_width", int)
            out["shape"] = take("shape", shape)
        # ---- end of the jax.random block
        else:
            self.fail(e, f"unsupported primitive '{e.primitive.name}'")
        if name not in _KEY_PRIMS and any(is_key(getattr(v, "aval", None))
                                          for v in list(e.invars) + list(e.outvars)):
            self.key_params(e, name, out)

        for k, v in list(p.items()):
            if k in _IGNORED_ANY:
                continue
            if k in _IGNORED_DEFAULTS and v is _IGNORED_DEFAULTS[k]:
                continue
            self.fail(e, f"{name}: param {k}={v!r} is not supported")
        return name, out


# ---- issue #49, jax.random: the primitives of key arrays, and those that move a key array's
# elements, their params over the key's trailing pair of uint32 (key<fry>[S] is uint32[S, 2]).
_KEY_PRIMS = {"random_seed", "random_wrap", "random_unwrap", "random_split", "random_fold_in",
              "random_bits"}
_KEY_AS_IS = {"squeeze", "expand_dims", "concatenate", "rev", "pvary", "pcast", "copy", "copy_p",
              "stop_gradient", "jit", "checkpoint", "custom_jvp_call", "custom_vjp_call", "cond",
              "while", "scan", "shard_map", "all_gather", "all_gather_invariant", "ppermute",
              "all_to_all"} | _CALLS | _PLACEMENT


def _key_params(self, e, name, out):
    rank = len(e.outvars[0].aval.shape) if e.outvars else 0
    if name in _KEY_AS_IS:
        if name in ("all_gather", "all_to_all", "all_gather_invariant") and out.get(
                "axis_index_groups"):
            self.fail(e, f"{name} of a key array with axis_index_groups")
        return
    if name == "slice":
        out["start_indices"] = out["start_indices"] + [0]
        out["limit_indices"] = out["limit_indices"] + [2]
        if out.get("strides") is not None:
            out["strides"] = out["strides"] + [1]
    elif name == "broadcast_in_dim":
        out["broadcast_dimensions"] = out["broadcast_dimensions"] + [len(out["shape"])]
        out["shape"] = out["shape"] + [2]
    elif name == "reshape":
        out["new_sizes"] = out["new_sizes"] + [2]
    elif name == "transpose":
        out["permutation"] = out["permutation"] + [rank]
    elif name == "select_n" and not e.invars[0].aval.shape:
        pass
    else:
        self.fail(e, f"{name} on a key array (key<fry>) is not supported (meshrun moves keys by "
                     f"slice, reshape, broadcast, squeeze, concatenate, transpose and the "
                     f"collectives)")


Walker.key_params = _key_params
# ---- end of the jax.random block


# Indexing (meshrun's lib/interp/ops/indexing.cpp): gather and the scatters, each scatter's
# combine as its update_jaxpr computes it; a plain scatter with an update function
# (x.at[i].apply(f), lax.scatter_apply) is `scatter-apply`, its update_jaxpr kept.
_SCATTERS = {"scatter": None, "scatter-add": "add", "scatter-sub": "sub", "scatter-mul": "mul",
             "scatter-min": "min", "scatter-max": "max"}
_MODES = {"CLIP": "clip", "FILL_OR_DROP": "fill", "PROMISE_IN_BOUNDS": "promise_in_bounds",
          "ONE_HOT": "one_hot"}


def gather_mode(walker, e, m):
    """GatherScatterMode -> "clip" | "fill" | "promise_in_bounds" | "one_hot" (a scatter's: XLA's
    scatter, dropping an out-of-bounds window; a gather's JAX itself cannot lower)."""
    key = getattr(m, "name", None) or str(m).rsplit(".", 1)[-1]
    if key not in _MODES:
        walker.fail(e, f"{e.primitive.name} with mode {m} (meshrun runs clip, fill, "
                       "promise_in_bounds and a scatter's one_hot)")
    if key == "ONE_HOT" and e.primitive.name == "gather":
        walker.fail(e, "gather with mode one_hot (JAX 0.10.2 cannot lower it either; "
                       "jnp.take_along_axis(..., mode='one_hot') is a one-hot matmul, which runs)")
    return _MODES[key]


def check_apply_body(walker, e, update, consts):
    """x.at[i].apply(f)'s body: elementwise over its scalar invars -- every value in it (calls'
    bodies included) a scalar, no constants closed over."""
    if consts:
        walker.fail(e, "scatter with an update function closing over values (update_consts)")

    def walk(j, depth):
        j = getattr(j, "jaxpr", j)
        if getattr(j, "constvars", ()):
            walker.fail(e, "scatter with an update function closing over values")
        for v in list(j.invars) + [o for q in j.eqns for o in q.outvars]:
            if getattr(v.aval, "shape", None) != ():
                walker.fail(e, f"scatter with an update function that is not elementwise over "
                               f"its scalar invar (a value {v.aval.str_short()} in it)")
        for q in j.eqns:
            for sub in _jaxprs_in_params(q.params):
                walk(sub, depth + 1)
    walk(update, 0)


def check_scatter_update(walker, e, name, update, consts):
    """The update_jaxpr of a scatter-* is the one binary op of its name on (operand, update);
    plain scatter has none (x.at[i].apply's is check_apply_body's)."""
    want = _SCATTERS[name]
    if consts:
        walker.fail(e, f"{name} with update_consts")
    if update is None:
        return
    j = getattr(update, "jaxpr", update)
    ok = (want is not None and len(j.eqns) == 1 and j.eqns[0].primitive.name == want
          and list(j.eqns[0].invars) == list(j.invars) and list(j.outvars) == list(j.eqns[0].outvars))
    if not ok:
        walker.fail(e, f"{name} with an update function (not {want}) is not supported")


def placement_text(t, prim):
    """A short human string of a placement's target: "P('data', None)", or None when it is
    not a named sharding (a device, a memory kind). Refuses unreduced / reduced specs."""
    sp = getattr(t, "spec", None)
    if sp is None:
        return None
    check_reduced(sp, f"{prim} to")
    return str(sp)


def ints(xs):
    return [int(x) for x in xs]


def is_key(aval):
    """A key array of JAX's default PRNG (key<fry>): meshrun holds it as uint32[..., 2]."""
    return hasattr(aval, "dtype") and _is_extended(aval.dtype) and str(aval.dtype) == "key<fry>"


def vtype(aval):
    if not hasattr(aval, "shape") or not hasattr(aval, "dtype"):
        raise Unsupported(f"a value of type {aval} (not an array)")
    if is_key(aval):  # issue #49: key<fry>[S] -> u32[S, 2], the key's data
        return {"dtype": "u32", "shape": shape(aval.shape) + [2]}
    sp = getattr(getattr(aval, "sharding", None), "spec", None)
    if sp is not None:
        check_reduced(sp, f"a value {aval.str_short() if hasattr(aval, 'str_short') else aval} "
                          "placed with")
    return {"dtype": dtype_name(aval.dtype), "shape": shape(aval.shape)}


def const(c):
    arr = np.asarray(c)
    dt = dtype_name(arr.dtype, "a constant")
    return {"dtype": dt, "shape": [int(d) for d in arr.shape],
            "data": [scalar_value(v, dt) for v in arr.reshape(-1).tolist()]}


def definition(j):
    """'file.py:7 (fn)': where the function a jaxpr traces is defined (messages only)."""
    info = getattr(getattr(j, "debug_info", None), "func_src_info", None)
    if not info or " at " not in info:
        return None
    fn, _, where = info.rpartition(" at ")
    path, _, line = where.rpartition(":")
    if not source_info_util.is_user_filename(path):
        return None
    return f"{os.path.basename(path)}:{line} (definition of {fn})" if line.isdigit() else None


def source(eqn):
    """'file.py:14 (fn)': the user's frame of the equation (file's basename, for stable output)."""
    try:
        fr = source_info_util.user_frame(eqn.source_info.traceback)
    except Exception:  # noqa: BLE001 - older/newer JAX: no traceback
        fr = None
    if fr is None:
        return None
    return f"{os.path.basename(fr.file_name)}:{fr.start_line} ({fr.function_name})"


# ------------------------------------------------------------------------------------------
# Finding the mesh and the splits of the top-level inputs


def iter_eqns(j):
    for e in j.eqns:
        yield e
        for v in e.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(sub, jcore.ClosedJaxpr):
                    yield from iter_eqns(sub.jaxpr)
                elif isinstance(sub, jcore.Jaxpr):
                    yield from iter_eqns(sub)


def shard_maps(j):
    return [e for e in iter_eqns(j) if e.primitive.name == "shard_map"]


def input_splits(closed):
    """For each top-level invar, per dimension, the product of the mesh axis sizes a shard_map's
    in_spec splits it by (following the var through jit calls); the lcm over every use."""
    n = len(closed.jaxpr.invars)
    splits = [[1] * len(v.aval.shape) for v in closed.jaxpr.invars]

    def visit(j, alias):  # alias: id(var) -> top-level invar index
        for e in j.eqns:
            name = _RENAMES.get(e.primitive.name, e.primitive.name)
            if name == "shard_map":
                mesh = e.params["mesh"]
                sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
                for a, s in zip(e.invars, e.params["in_specs"]):
                    i = alias.get(id(a))
                    if i is None:
                        continue
                    for d, entry in enumerate(tuple(s)):
                        if entry is None:
                            continue
                        axes = (entry,) if isinstance(entry, str) else tuple(entry)
                        f = int(np.prod([sizes[x] for x in axes]))
                        splits[i][d] = math.lcm(splits[i][d], f)
            for v in e.params.values():
                if isinstance(v, (jcore.ClosedJaxpr, jcore.Jaxpr)):
                    inner = v.jaxpr if isinstance(v, jcore.ClosedJaxpr) else v
                    if len(inner.invars) == len(e.invars):
                        sub_alias = {id(iv): alias[id(a)] for iv, a in zip(inner.invars, e.invars)
                                     if not isinstance(a, jcore.Literal) and id(a) in alias}
                        visit(inner, sub_alias)

    visit(closed.jaxpr, {id(v): i for i, v in enumerate(closed.jaxpr.invars)})
    assert len(splits) == n
    return splits


def mesh_of_jaxpr(closed):
    meshes = []
    for e in shard_maps(closed.jaxpr):
        m = [[str(a), int(s)] for a, s in zip(e.params["mesh"].axis_names,
                                               e.params["mesh"].axis_sizes)]
        if m not in meshes:
            meshes.append(m)
    if len(meshes) > 1:
        raise Unsupported(f"shard_maps over different meshes {meshes}")
    return meshes[0] if meshes else []


def dims_of(jaxpr_json):
    """The dimension variables the jaxpr's invar shapes use, in order of first use."""
    import re
    out = []
    for v in jaxpr_json["invars"]:
        for d in v["type"]["shape"]:
            if isinstance(d, str):
                for tok in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", d):
                    if tok not in ("floordiv", "mod", "max", "min") and tok not in out:
                        out.append(tok)
    return out


def jaxpr_json(closed):
    return Walker().closed(closed)


def jax_version():
    return jax.__version__
