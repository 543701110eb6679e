// Issue #49, dtypes: the primitives that run on bf16 and f16 and on i8, u8, i16, u16 -- the
// dtypes float32 holds exactly (ir.hpp's DTypeInfo table) -- and whether the evaluator brings
// their results into the dtype after (DTypeInfo::fit). Every claim here is a fixture of
// tests/jax/dtype_rules (JAX 0.10.2 on CPU, compared bit for bit).
//
// What XLA:CPU does (its HLO after optimization, `jax.jit(f).lower(...).compile().as_text()`):
// a bf16 or f16 elementwise op is convert-to-f32, the f32 op, convert-back, per op (the convert
// pair between two ops of a fused chain stays); a dot_general converts its operands to f32,
// accumulates in f32 and converts its result once; a psum of bf16 is an all-reduce of f32
// converted once after. Integer ops wrap modulo 2^bits (computed here exactly in int64, then
// wrapped).
#include <map>
#include <string_view>

#include "interp/prim_util.hpp"

namespace meshrun::interp {

namespace {

constexpr unsigned kBoth = NarrowSupport::kHalf | NarrowSupport::kSmallInt;
constexpr unsigned kHalf = NarrowSupport::kHalf;
constexpr unsigned kSmall = NarrowSupport::kSmallInt;

struct Row {
  std::string_view name;
  NarrowSupport s;
};

constexpr Row kRows[] = {
    // ---- computed in float32 (or int64), then fit into the dtype
    {"add", {kBoth, true}},
    {"add_any", {kBoth, true}},
    {"sub", {kBoth, true}},
    {"mul", {kBoth, true}},
    {"div", {kHalf, true}},
    {"max", {kBoth, true}},
    {"min", {kBoth, true}},
    {"neg", {kBoth, true}},
    {"abs", {kBoth, true}},
    {"sign", {kBoth, true}},
    {"square", {kBoth, true}},
    {"exp", {kHalf, true}},
    {"log", {kHalf, true}},
    {"tanh", {kHalf, true}},
    {"logistic", {kHalf, true}},
    {"sqrt", {kHalf, true}},
    {"rsqrt", {kHalf, true}},
    {"integer_pow", {kHalf, true}},
    {"and", {kSmall, true}},
    {"or", {kSmall, true}},
    {"xor", {kSmall, true}},
    {"not", {kSmall, true}},
    {"dot_general", {kHalf, true}},
    {"psum", {kHalf, true}},
    {"psum_invariant", {kHalf, true}},
    // ---- their results are operands' values: nothing to fit
    {"eq", {kBoth, false}},
    {"ne", {kBoth, false}},
    {"lt", {kBoth, false}},
    {"le", {kBoth, false}},
    {"gt", {kBoth, false}},
    {"ge", {kBoth, false}},
    {"select_n", {kBoth, false}},
    {"convert_element_type", {kBoth, false}},  // its own rules (elementwise_more.cpp)
    {"reduce_max", {kBoth, false}},
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
    {"ppermute", {kBoth, false}},
    {"all_to_all", {kBoth, false}},
};

}  // namespace

const NarrowSupport* narrow_dtype_support(std::string_view primitive) {
  static const std::map<std::string_view, NarrowSupport, std::less<>> kTable = [] {
    std::map<std::string_view, NarrowSupport, std::less<>> m;
    for (const Row& r : kRows) m.emplace(r.name, r.s);
    return m;
  }();
  const auto it = kTable.find(primitive);
  return it == kTable.end() ? nullptr : &it->second;
}

}  // namespace meshrun::interp
