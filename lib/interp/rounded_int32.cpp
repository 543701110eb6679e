// Issue #49: int32 literals beyond what float32 holds. meshrun holds an int32 in a float32
// (value.hpp), exactly up to 2^24; every result an integer primitive computes beyond that is
// refused. A literal (or an element of a const) of 2^25 or more in magnitude --
// jax.random.randint clips its bounds to [-2^31, 2^31 - 1] with literals,
// jnp.iinfo(jnp.int32).max is a common sentinel -- is read (reader.cpp) and held as the float32
// nearest it. Literals between 2^24 and 2^25 stay refused:
// 2^24 + 1 rounds to 2^24, which an exact int32 can be.
//
// Such a "rounded" value R (|R| >= 2^25) is exact to what observes it only:
//  - ordered against an exact int32 e (|e| <= 2^24): rounding is monotone and float(R) is at least
//    2^25 in magnitude, so eq ne lt le gt ge give the exact answer, and max, min, clamp return
//    e or R itself;
//  - ordered against another rounded value of a different float (the rounding keeps a strict
//    order); two of one float may be different integers (2^31 - 1 and 2^31 - 10 are both 2^31):
//    a comparison of those is refused. max, min and clamp of them (and their folds: reduce_max,
//    reduce_min, pmax, pmin, cummax, cummin) return that float, which every observation here
//    sees alike, so they run;
//  - moved (reshapes, slices, concatenation, select_n's cases, the collectives that move);
//  - converted to float32 or bool: XLA's convert rounds to nearest, to this same float; != 0.
// Every other primitive (arithmetic, bit operations, conversion to another integer, reductions,
// sorts, indexing, psum) refused when an operand holds one, before it runs, and so is a program
// output holding one: one line, exit 2 (eval.cpp's rethrow_at names the equation).
#include "interp/rounded_int32.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include "interp/prim_util.hpp"

namespace meshrun::interp {
namespace {

using prim::dtype_word;
using prim::fail;

constexpr float kExact = 16777216.0f;  // 2^24

bool rounded(float v) { return std::fabs(v) > kExact; }

const float* first_rounded(const Value& v) {
  if (v.dtype != DType::kI32) return nullptr;
  const auto it = std::find_if(v.t.data.begin(), v.t.data.end(), rounded);
  return it == v.t.data.end() ? nullptr : &*it;
}

constexpr std::string_view kCompares[] = {"eq", "ne", "lt", "le", "gt", "ge"};
constexpr std::string_view kOrders[] = {"max",  "min",  "clamp",  "reduce_max", "reduce_min",
                                        "pmax", "pmin", "cummax", "cummin"};
constexpr std::string_view kMoves[] = {"broadcast_in_dim",
                                       "reshape",
                                       "squeeze",
                                       "expand_dims",
                                       "transpose",
                                       "concatenate",
                                       "stack",
                                       "slice",
                                       "rev",
                                       "pad",
                                       "copy",
                                       "copy_p",
                                       "stop_gradient",
                                       "pvary",
                                       "pcast",
                                       "all_gather",
                                       "all_gather_invariant",
                                       "ppermute",
                                       "all_to_all"};

bool among(std::string_view p, std::span<const std::string_view> names) {
  return std::find(names.begin(), names.end(), p) != names.end();
}

[[noreturn]] void refuse(const Eqn& eqn, float v, const std::string& why) {
  fail("an int32 literal beyond 2^24, or one held as its bits before (held as " +
       std::to_string(static_cast<long long>(v)) + ") reaches " + eqn.primitive + ", " + why +
       ": meshrun holds int32 in float32, and such a literal only where it is compared with, "
       "or the max or min of, an exact int32, moved, or converted to float32 "
       "(docs/program-format.md, int32 literals beyond 2^24)");
}

}  // namespace

bool rounded_int32_literal(double v) {
  return v == std::floor(v) && v >= -2147483648.0 && v <= 2147483647.0 &&
         std::fabs(v) >= 33554432.0;
}

void check_rounded_int32(const Eqn& eqn, std::span<Value* const> ops) {
  std::size_t with = 0;
  const float* any = nullptr;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (const float* r = first_rounded(*ops[i]); r != nullptr) {
      ++with;
      any = r;
      if (eqn.primitive == "select_n" && i == 0) refuse(eqn, *r, "as its predicate");
    }
  }
  if (any == nullptr) return;
  const std::string_view p = eqn.primitive;
  if (among(p, kMoves) || among(p, kOrders) || p == "select_n") return;
  if (p == "convert_element_type") {
    const DType to = param_dtype(eqn, "new_dtype");
    if (to == DType::kF32 || to == DType::kBool || to == DType::kI32) return;
    refuse(eqn, *any, std::string("converted to ") + dtype_word(to));
  }
  if (among(p, kCompares)) {
    if (with < 2) return;
    // Both operands hold rounded values: refused where two of one float could be compared.
    std::set<float> a;
    for (float v : ops[0]->t.data)
      if (rounded(v)) a.insert(v);
    for (float v : ops[1]->t.data)
      if (rounded(v) && a.count(v) != 0)
        refuse(eqn, v, "on both sides (two integers may round to that one float)");
    return;
  }
  refuse(eqn, *any, "which computes on its value");
}

std::string rounded_int32_output(const Value& v, const std::string& what) {
  const float* r = first_rounded(v);
  if (r == nullptr) return "";
  return what + " holds an int32 beyond 2^24 (held as " +
         std::to_string(static_cast<long long>(*r)) +
         "): meshrun holds int32 in float32, and cannot return it exactly";
}

}  // namespace meshrun::interp
