// Issue #49, dtypes: the primitives that run on bf16 and f16 and on i8, u8, i16, u16 -- the
// dtypes float32 holds exactly (ir.hpp's DTypeInfo table) -- and whether the evaluator brings
// their results into the dtype after (DTypeInfo::fit). Every claim here is a fixture of
// tests/jax/dtype_rules (JAX 0.10.2 on CPU, compared bit for bit).
//
// What XLA:CPU does (its HLO after optimization, `jax.jit(f).lower(...).compile().as_text()`):
// a bf16 or f16 elementwise op is convert-to-f32, the f32 op, convert-back, per op (the convert
// pair between two ops of a fused chain stays); a dot_general converts its operands to f32,
// accumulates in f32 and converts its result once; a psum of bf16 is an all-reduce of f32
// converted once after; and a convert_element_type to f32 of a bf16 op's result folds XLA's
// convert pair, leaving the op's f32 result unrounded (mark_narrow_uses). Integer ops wrap modulo
// 2^bits (computed here exactly in int64, then wrapped).
#include <map>
#include <vector>
#include <string_view>

#include "interp/prim_util.hpp"

namespace meshrun::interp {

namespace {

constexpr unsigned kBoth = NarrowSupport::kHalf | NarrowSupport::kSmallInt;
constexpr unsigned kHalf = NarrowSupport::kHalf;
constexpr unsigned kSmall = NarrowSupport::kSmallInt;
constexpr NarrowSupport::ToF32 kFolds = NarrowSupport::ToF32::kFolds;
// psum of bf16: XLA's all-reduce is promoted to f32 and converted after, and a convert to f32 of
// its result keeps that rounding (JAX 0.10.2, 8 devices).
constexpr NarrowSupport::ToF32 kKeeps = NarrowSupport::ToF32::kKeeps;

struct Row {
  std::string_view name;
  NarrowSupport s;
};

constexpr Row kRows[] = {
    // ---- computed in float32 (or int64), then fit into the dtype
    {"add", {kBoth, true, kFolds}},
    {"add_any", {kBoth, true, kFolds}},
    {"sub", {kBoth, true, kFolds}},
    {"mul", {kBoth, true, kFolds}},
    {"div", {kBoth, true, kFolds}},  // i8 ... u16: dtypes2
    {"max", {kBoth, true, kFolds}},
    {"min", {kBoth, true, kFolds}},
    {"neg", {kBoth, true, kFolds}},
    {"abs", {kBoth, true, kFolds}},
    {"sign", {kBoth, true, kFolds}},
    {"square", {kBoth, true, kFolds}},
    {"exp", {kHalf, true, kFolds}},
    {"log", {kHalf, true, kFolds}},
    {"tanh", {kHalf, true, kFolds}},
    {"logistic", {kHalf, true}},
    {"sqrt", {kHalf, true, kFolds}},
    {"rsqrt", {kHalf, true, kFolds}},
    {"integer_pow", {kHalf, true}},
    {"log1p", {kHalf, true, kFolds}},
    {"sin", {kHalf, true, kFolds}},
    {"cos", {kHalf, true, kFolds}},
    {"erf", {kHalf, true}},
    {"floor", {kHalf, true, kFolds}},
    {"ceil", {kHalf, true, kFolds}},
    {"and", {kSmall, true}},
    {"or", {kSmall, true}},
    {"xor", {kSmall, true}},
    {"not", {kSmall, true}},
    {"dot_general", {kBoth, true, kFolds}},  // i8 ... u16: dtypes2
    // psum: bf16 promoted to f32 and rounded once; f16 folded in f16 (collective_ops.cpp); the
    // integers exact, wrapped (dtypes2)
    {"psum", {kBoth, true, kKeeps}},
    {"psum_invariant", {kBoth, true, kKeeps}},
    // ---- their results are operands' values: nothing to fit
    {"eq", {kBoth, false}},
    {"ne", {kBoth, false}},
    {"lt", {kBoth, false}},
    {"le", {kBoth, false}},
    {"gt", {kBoth, false}},
    {"ge", {kBoth, false}},
    {"select_n", {kBoth, false}},
    {"clamp", {kBoth, false}},
    {"is_finite", {kHalf, false}},
    {"pad", {kBoth, false}},
    {"dynamic_slice", {kBoth, false}},
    {"dynamic_update_slice", {kBoth, false}},
    {"convert_element_type", {kBoth, false}},  // its own rules (elementwise_more.cpp)
    {"reduce_max", {kBoth, false}},
    {"reduce_sum", {kBoth, false}},   // its own fit after each add (reductions.cpp)
    {"reduce_prod", {kBoth, false}},  // and after each multiply
    {"argmax", {kBoth, false}},
    {"argmin", {kBoth, false}},
    {"reduce_min", {kBoth, false}},
    {"broadcast_in_dim", {kBoth, false}},
    {"reshape", {kBoth, false}},
    {"squeeze", {kBoth, false}},
    {"expand_dims", {kBoth, false}},
    {"transpose", {kBoth, false}},
    {"concatenate", {kBoth, false}},
    {"slice", {kBoth, false}},
    {"rev", {kBoth, false}},
    {"stop_gradient", {kBoth, false}},
    {"copy", {kBoth, false}},
    {"copy_p", {kBoth, false}},
    {"pvary", {kBoth, false}},
    {"pcast", {kBoth, false}},
    {"pmax", {kBoth, false}},
    {"pmin", {kBoth, false}},
    {"all_gather", {kBoth, false}},
    {"all_gather_invariant", {kBoth, false}},
    {"ppermute", {kBoth, false}},
    {"all_to_all", {kBoth, false}},
    // ---- dtypes2 (issue #49): indexing, sorting and the cumulative ops. Values moved or
    // compared (gather, scatter, its min and max, sort, top_k, cummax, cummin); the scatters'
    // add, sub and mul fit after each combine, in index order (ops/indexing.cpp), and cumsum and
    // cumprod after each step of XLA's scan tree (ops/cumulative.cpp), as XLA:CPU's reducer.
    {"gather", {kBoth, false}},
    {"scatter", {kBoth, false}},
    {"scatter-add", {kBoth, false}},
    {"scatter-sub", {kBoth, false}},
    {"scatter-mul", {kBoth, false}},
    {"scatter-min", {kBoth, false}},
    {"scatter-max", {kBoth, false}},
    {"sort", {kBoth, false}},
    {"top_k", {kBoth, false}},
    {"cumsum", {kBoth, false}},
    {"cumprod", {kBoth, false}},
    {"cummax", {kBoth, false}},
    {"cummin", {kBoth, false}},
    // max and min pooling: values compared, a window of padding only the dtype's identity
    // (ops/windows.cpp); reduce_window's generic form with a max or min body only
    {"reduce_window_max", {kBoth, false}},
    {"reduce_window_min", {kBoth, false}},
    {"reduce_window", {kBoth, false}},
    // psum_scatter: as psum (XLA's reduce-scatter of bf16 promoted to f32, rounded once; of f16
    // folded in f16; of the integers wrapped)
    {"reduce_scatter", {kBoth, true, kKeeps}},
    {"psum_scatter", {kBoth, true, kKeeps}},
    // the float math XLA:CPU upcasts per op (each the f32 op, then rounded: JAX 0.10.2's bits on
    // 2 x 10^4 values of each dtype); exp2 is expanded first (unary.cpp); rem and round are
    // exact. Integer div and rem truncate, x / 0 is -1 and x % 0 is x, as for int32, wrapped.
    {"pow", {kHalf, true}},
    {"exp2", {kHalf, true}},
    {"round", {kHalf, true}},
    {"cbrt", {kHalf, true}},
    {"erfc", {kHalf, true}},
    {"erf_inv", {kHalf, true}},
    {"tan", {kHalf, true}},
    {"sinh", {kHalf, true}},
    {"cosh", {kHalf, true}},
    {"expm1", {kHalf, true}},  // bf16 only: f16's refused in its infer (unary.cpp)
    {"rem", {kBoth, true}},
    // the bit ops on the dtype's own width, wrapped (ops/bit_ops.cpp)
    {"shift_left", {kSmall, false}},
    {"shift_right_logical", {kSmall, false}},
    {"shift_right_arithmetic", {kSmall, false}},
    {"population_count", {kSmall, false}},
    {"clz", {kSmall, false}},
    // conv: operands converted to f32, the f32 conv (ops/conv.cpp), rounded once
    {"conv_general_dilated", {kHalf, true}},
    // ---- end of dtypes2
};

// ---- issue #49, jax.random: the primitives that take uint32 (held as its bits). Those that
// compute run ops/uint32.cpp's kernel on the bits (u32_primitive); the others move values, which
// their own kernels copy bit for bit (sort orders a uint32 key as unsigned: ops/sorting.cpp).
// psum is not among them.
constexpr std::string_view kU32Rows[] = {"add",
                                         "sub",
                                         "mul",
                                         "div",
                                         "rem",
                                         "population_count",
                                         "clz",
                                         "reduce_sum",
                                         "reduce_prod",
                                         "reduce_max",
                                         "reduce_min",
                                         "argmax",
                                         "argmin",
                                         "sort",
                                         "and",
                                         "or",
                                         "xor",
                                         "not",
                                         "shift_left",
                                         "shift_right_logical",
                                         "shift_right_arithmetic",
                                         "eq",
                                         "ne",
                                         "lt",
                                         "le",
                                         "gt",
                                         "ge",
                                         "max",
                                         "min",
                                         "select_n",
                                         "convert_element_type",
                                         "bitcast_convert_type",
                                         "iota",
                                         "broadcast_in_dim",
                                         "reshape",
                                         "squeeze",
                                         "expand_dims",
                                         "transpose",
                                         "concatenate",
                                         "stack",
                                         "slice",
                                         "rev",
                                         "pad",
                                         "dynamic_slice",
                                         "dynamic_update_slice",
                                         "stop_gradient",
                                         "copy",
                                         "copy_p",
                                         "pvary",
                                         "pcast",
                                         "all_gather",
                                         "all_gather_invariant",
                                         "ppermute",
                                         "all_to_all",
                                         "threefry2x32",
                                         "random_seed",
                                         "random_wrap",
                                         "random_unwrap",
                                         "random_split",
                                         "random_fold_in",
                                         "random_bits"};
// ---- end of the uint32 block

}  // namespace

void mark_narrow_uses(Jaxpr& jx) {
  const auto to_f32 = [](const Eqn& e) {
    return e.primitive == "convert_element_type" && e.params.is_object() &&
           e.params.contains("new_dtype") && e.params["new_dtype"] == "f32";
  };
  std::vector<int> converts(jx.types.size(), 0), others(jx.types.size(), 0);
  for (const Eqn& e : jx.eqns) {
    for (const Atom& a : e.in) {
      if (a.is_literal()) continue;
      (to_f32(e) ? converts : others)[static_cast<std::size_t>(a.var)]++;
    }
  }
  for (const Atom& a : jx.outvars)
    if (!a.is_literal()) others[static_cast<std::size_t>(a.var)]++;
  for (Eqn& e : jx.eqns) {
    e.narrow_use = Eqn::NarrowUse::kRounded;
    if (e.out.size() != 1) continue;
    const auto v = static_cast<std::size_t>(e.out[0]);
    const DType t = jx.types[v].dtype;
    // bf16 only: an f16 result converted to f32 keeps its rounding (JAX 0.10.2: f16
    // (x - y).astype(f32) is the f16 difference).
    if (t != DType::kBF16 || converts[v] == 0) continue;
    const NarrowSupport* s = narrow_dtype_support(e.primitive);
    if (s == nullptr || !s->fit) continue;  // its values are its operands': nothing to fold
    if (s->to_f32 == NarrowSupport::ToF32::kKeeps) continue;
    e.narrow_use = s->to_f32 == NarrowSupport::ToF32::kFolds && others[v] == 0
                       ? Eqn::NarrowUse::kUnrounded
                       : Eqn::NarrowUse::kRefused;
  }
}

const NarrowSupport* narrow_dtype_support(std::string_view primitive) {
  static const std::map<std::string_view, NarrowSupport, std::less<>> kTable = [] {
    std::map<std::string_view, NarrowSupport, std::less<>> m;
    for (const Row& r : kRows) m.emplace(r.name, r.s);
    for (std::string_view n : kU32Rows) m[n].kinds |= NarrowSupport::kU32;
    m["random_bits"].kinds |= NarrowSupport::kSmallInt;  // bit_width 8 and 16: uint8, uint16
    return m;
  }();
  const auto it = kTable.find(primitive);
  return it == kTable.end() ? nullptr : &it->second;
}

}  // namespace meshrun::interp
