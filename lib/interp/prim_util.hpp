// What the primitives' sources share: their registry entries, error and type helpers, and the
// strided copy under broadcasting, transposes and slices. Internal to lib/interp.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "interp/primitives.hpp"
#include "interp/scalar_ops.hpp"  // max_ieee, min_ieee, f32::

namespace meshrun::interp::prim {

using Entry = PrimitiveEntry;
// Each source's primitives (primitives.cpp joins them into the registry).
std::span<const Entry> elementwise_entries();
std::span<const Entry> elementwise_more_entries();
std::span<const Entry> unary_entries();
std::span<const Entry> shape_entries();
std::span<const Entry> slicing_entries();
std::span<const Entry> reduction_entries();
std::span<const Entry> dot_entries();
std::span<const Entry> collective_entries();
std::span<const Entry> placement_entries();  // reshard, device_put, ... (ops/placement.cpp)
std::span<const Entry> indexing_entries();   // gather, scatter, scatter-add, ... (ops/indexing.cpp)
std::span<const Entry> holder_entries();     // jit, pjit, custom_*_call, shard_map (primitives.cpp)
std::span<const Entry> cumulative_entries();  // cumsum, cumprod, ... (ops/cumulative.cpp)
std::span<const Entry> sorting_entries();     // sort, top_k, approx_top_k (ops/sorting.cpp)
std::span<const Entry> window_entries();      // reduce_window*, select_and_* (ops/windows.cpp)
// Issue #49: tan, asin, ..., lgamma, digamma (ops/float_math.cpp); population_count, clz and the
// shifts (ops/bit_ops.cpp); conv_general_dilated and rev (ops/conv.cpp).
std::span<const Entry> float_math_entries();
std::span<const Entry> bit_entries();
std::span<const Entry> conv_entries();
// Issue #49: cholesky, triangular_solve, lu, custom_linear_solve, stack (ops/linalg.cpp).
std::span<const Entry> linalg_entries();
// Issue #49, jax.random: bitcast_convert_type (ops/uint32.cpp, with uint32's kernels,
// u32_primitive); threefry2x32, random_seed, random_split, ... (ops/random.cpp).
std::span<const Entry> uint32_entries();
std::span<const Entry> random_entries();

using Types = std::vector<ValueType>;
using Values = std::vector<Value>;

// One result, as a primitive returns it.
inline Values one(Value v) {
  Values r;
  r.push_back(std::move(v));
  return r;
}

// "(1, 2)", "(3,)": a list of ints as JAX's messages print a tuple.
inline std::string ints_str(const std::vector<std::int64_t>& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

[[noreturn]] void fail(const std::string& what);
// "(4, 2)", "(3,)", "()": a shape as JAX's messages print it.
std::string dims_str(const Shape& shape);
// The type, refused (PrimitiveError) above 2^31 elements.
ValueType make_type(DType dtype, Shape shape);
// Refuses an equation with another number of operands than `want` ("at least" when `at_least`).
void expect_operands(const Eqn& eqn, std::size_t got, std::size_t want, bool at_least = false);
// Axis `v` of a rank-`rank` array named by param `key`; PrimitiveError unless 0 <= v < rank.
std::size_t checked_axis(const Eqn& eqn, const char* key, std::int64_t v, std::size_t rank);
// Param `key` as distinct axes of a rank-`rank` array.
std::vector<std::size_t> param_axis_list(const Eqn& eqn, const char* key, std::size_t rank);

// One Dim (an integer or an expression) evaluated under ctx.dims.
std::int64_t param_dim(const Eqn& eqn, const char* key, const PrimContext& ctx);
// One element of a list param: an integer of either sign up to 2^40 in magnitude, or an
// expression evaluated under ctx.dims.
std::int64_t index_of(const nlohmann::json& e, const char* key, const PrimContext& ctx);

// Shape and index arithmetic on a file's numbers, checked: a + b and a * b, or PrimitiveError
// "<what> overflows int64 (a + b)" -- never a wrapped size that passes for a small one.
std::int64_t checked_add(std::int64_t a, std::int64_t b, const std::string& what);
std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& what);

// Integers are held as floats, exact below 2^24 in magnitude; a result beyond is refused.
inline constexpr std::int64_t kMaxInt = std::int64_t{1} << 24;
float int_result(std::int64_t v, const Eqn& eqn);
// An integer result of dtype t computed exactly: wrapped into an i8 ... u16, refused beyond 2^24
// for i32 (int_result).
inline float int_fit(DType t, std::int64_t v, const Eqn& eqn) {
  return is_narrow(t) ? dtype_info(t).wrap(v) : int_result(v, eqn);
}
// A float32 as int32, as XLA converts: truncated toward zero, NaN -> 0; refused (PrimitiveError
// naming the primitive) beyond 2^24. convert_element_type's, and dot_general's with
// preferred_element_type int32 on float32 operands.
float f32_to_i32(float v, const Eqn& eqn);
const char* dtype_word(DType t);  // "float32", "int32", "bool": JAX's names, for messages

// Dtype sets, as bits: which dtypes a primitive accepts.
// bf16 and f16 count as kF, i8 ... u16 as kI (issue #49): which primitives take them at all is
// narrow_dtype_support's (primitives.hpp), checked before anything runs.
enum : unsigned { kF = 1, kI = 2, kB = 4, kNum = kF | kI, kAny = kF | kI | kB };
inline unsigned dtype_bit(DType t) {
  const DKind k = dtype_info(t).kind;
  return k == DKind::kFloat ? kF : k == DKind::kBool ? kB : kI;
}
inline bool is_float(DType t) { return dtype_info(t).kind == DKind::kFloat; }

// PrimitiveError "<primitive> does not accept dtype int32" unless t is in `allowed`.
void check_dtype(const Eqn& eqn, DType t, unsigned allowed);

// The output's storage: operand `in`'s own when owned and of `shape`'s size (the operand is then
// moved from), else a fresh array.
Value output_for(Value* in, bool owned, DType dtype, const Shape& shape);
// A copy of `in`, or `in` itself moved when owned.
Value pass_through(Value* in, bool owned);

// Row-major strides of `shape`, in elements (PrimitiveError when they overflow int64: only an
// array of no elements, as f32[0,2^40,2^40], can have such a shape).
std::vector<std::int64_t> strides_of(const Shape& shape);
// For every index i over `shape`: dst[i . dst_strides] = src[i . src_strides]. The destination
// elements must be distinct: they are written in no particular order (the last two dimensions by
// tiles).
void copy_strided(const Shape& shape, const float* src, std::span<const std::int64_t> src_strides,
                  float* dst, std::span<const std::int64_t> dst_strides);

// The shape left when `axes` are reduced; keep[d]: dimension d is not reduced.
inline Shape reduced_shape(const Shape& in, const std::vector<std::size_t>& axes,
                           std::vector<bool>* keep) {
  keep->assign(in.size(), true);
  for (std::size_t a : axes) (*keep)[a] = false;
  Shape out;
  for (std::size_t i = 0; i < in.size(); ++i)
    if ((*keep)[i]) out.push_back(in[i]);
  return out;
}

// f(input index, output index) for every input element in row-major order.
template <class F>
void walk(const Shape& xs, const std::vector<bool>& keep, F f) {
  const std::size_t n = shape_size(xs), rank = xs.size();
  if (n == 0) return;
  std::vector<std::size_t> ds(rank, 0), idx(rank, 0);
  std::size_t m = 1;
  for (std::size_t i = rank; i-- > 0;) {
    if (keep[i]) {
      ds[i] = m;
      m *= xs[i];
    }
  }
  std::size_t o = 0;
  for (std::size_t i = 0; i < n; ++i) {
    f(i, o);
    for (std::size_t k = rank; k-- > 0;) {
      if (++idx[k] < xs[k]) {
        o += ds[k];
        break;
      }
      o -= ds[k] * (idx[k] - 1);
      idx[k] = 0;
    }
  }
}

}  // namespace meshrun::interp::prim
