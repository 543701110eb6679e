// Issue #49, jax.random: the primitives that compute on uint32. A uint32 is held as its 32 bits in
// the float32 slot of a Value (ir.hpp's DType::kU32: memcpy'd, not its value), so the primitives
// that only move values (reshape, slice, concatenate, all_gather, ...) keep it as they are; the
// ones here read and write the bits: add, sub, mul modulo 2^32, the bitwise ops and shifts (an
// amount of 32 or more gives 0, or the sign's fill for shift_right_arithmetic, which shifts the
// bits as int32's, as XLA), unsigned comparisons, min and max, select_n, iota, and the
// conversions as XLA:CPU converts (JAX 0.10.2): uint32 -> float32 rounded to nearest, float32 ->
// uint32 truncated toward zero and saturated at 0 and 2^32 - 1 (NaN -> 0), int32 <-> uint32 the
// two's complement bits (an int32 beyond 2^24 refused, as everywhere). bitcast_convert_type
// between float32, int32 and uint32 is here too, for every pair (an equation of no uint32 runs
// it through the registry). The compiler picks these kernels for an equation with a uint32
// operand or result (u32_primitive); narrow_dtypes.cpp's gate refuses uint32 everywhere else.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "interp/int32_bits.hpp"
#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {
namespace {

using U = std::uint32_t;

U bits(float slot) { return slot_to_u32(slot); }
float slot(U u) { return u32_to_slot(u); }

// A value of dtype t as its 32 bits: a uint32's slot, a float32's bits, an int32's two's
// complement, a bool 0 or 1.
U as_bits(DType t, float v) {
  if (t == DType::kU32 || t == DType::kF32) return bits(v);
  return static_cast<U>(static_cast<std::int32_t>(static_cast<std::int64_t>(v)));
}

// Operands of one shape, or rank 0 (a literal), or of one rank with dimensions of 1 broadcast
// (JAX's jaxprs do: jax.random.randint's `rem u32[16] u32[1]`); the result's shape.
Shape common_shape(const Eqn& eqn, std::span<const ValueType> in) {
  Shape s;
  for (const ValueType& t : in) {
    if (t.shape.empty()) continue;
    if (s.empty()) {
      s = t.shape;
      continue;
    }
    bool ok = s.size() == t.shape.size();
    for (std::size_t d = 0; ok && d < s.size(); ++d) {
      if (s[d] == t.shape[d] || t.shape[d] == 1) continue;
      if (s[d] == 1) {
        s[d] = t.shape[d];
      } else {
        ok = false;
      }
    }
    if (!ok) {
      fail(eqn.primitive + " requires arguments of the same shape, got " + dims_str(s) + ", " +
           dims_str(t.shape));
    }
  }
  return s;
}

// Per element of `out`, the index into an operand of shape `in` broadcast to it (rank 0: 0).
std::vector<std::size_t> broadcast_index(const Shape& out, const Shape& in) {
  std::size_t n = 1;
  for (std::size_t d : out) n *= d;
  std::vector<std::size_t> at(n, 0);
  if (in.empty()) return at;
  std::vector<std::size_t> idx(out.size(), 0);
  const std::vector<std::int64_t> st = strides_of(in);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t o = 0;
    for (std::size_t d = 0; d < out.size(); ++d)
      if (in[d] != 1) o += idx[d] * static_cast<std::size_t>(st[d]);
    at[i] = o;
    for (std::size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return at;
}

void all_u32(const Eqn& eqn, std::span<const ValueType> in) {
  for (const ValueType& t : in) {
    if (t.dtype != DType::kU32) {
      fail(eqn.primitive + " requires arguments of the same dtype, got uint32 and " +
           dtype_word(t.dtype));
    }
  }
}

// ---- add, sub, mul, and, or, xor, shifts, max, min; eq ... ge
U add(U a, U b) { return a + b; }
U sub(U a, U b) { return a - b; }
U mul(U a, U b) { return a * b; }
U band(U a, U b) { return a & b; }
U bor(U a, U b) { return a | b; }
U bxor(U a, U b) { return a ^ b; }
U shl(U a, U b) { return b < 32 ? a << b : 0; }
U shrl(U a, U b) { return b < 32 ? a >> b : 0; }
U shra(U a, U b) {
  const auto s = static_cast<std::int32_t>(a);
  return static_cast<U>(b < 32 ? s >> b : (s < 0 ? -1 : 0));
}
U umax(U a, U b) { return std::max(a, b); }
U umin(U a, U b) { return std::min(a, b); }
// XLA's unsigned division: x / 0 is 2^32 - 1, x % 0 is x (JAX 0.10.2 on CPU).
U udiv(U a, U b) { return b == 0 ? 0xffffffffu : a / b; }
U urem(U a, U b) { return b == 0 ? a : a % b; }
bool eq(U a, U b) { return a == b; }
bool ne(U a, U b) { return a != b; }
bool lt(U a, U b) { return a < b; }
bool le(U a, U b) { return a <= b; }
bool gt(U a, U b) { return a > b; }
bool ge(U a, U b) { return a >= b; }

template <typename R, R (*F)(U, U)>
Types binary_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 2);
  all_u32(eqn, in);
  return {make_type(std::is_same_v<R, bool> ? DType::kBool : DType::kU32, common_shape(eqn, in))};
}

template <typename R, R (*F)(U, U)>
Values binary_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                   PrimContext&) {
  const Value& a = *in[0];
  const Value& b = *in[1];
  constexpr bool kCompare = std::is_same_v<R, bool>;
  if (a.t.shape != b.t.shape && !a.t.shape.empty() && !b.t.shape.empty()) {
    // dimensions of 1 broadcast (common_shape)
    const ValueType ts[2] = {a.type(), b.type()};
    const Shape s = common_shape(eqn, ts);
    const std::vector<std::size_t> ia = broadcast_index(s, a.t.shape),
                                   ib = broadcast_index(s, b.t.shape);
    Value out(kCompare ? DType::kBool : DType::kU32, Tensor(s));
    for (std::size_t i = 0; i < out.t.size(); ++i) {
      const R r = F(bits(a.t.data[ia[i]]), bits(b.t.data[ib[i]]));
      out.t.data[i] = kCompare ? (r ? 1.0f : 0.0f) : slot(static_cast<U>(r));
    }
    return one(std::move(out));
  }
  const bool as = a.t.shape.empty(), bs = b.t.shape.empty();
  Value out(kCompare ? DType::kBool : DType::kU32, Tensor(as ? b.t.shape : a.t.shape));
  const std::size_t n = out.t.size();
  for (std::size_t i = 0; i < n; ++i) {
    const R r = F(bits(a.t.data[as ? 0 : i]), bits(b.t.data[bs ? 0 : i]));
    if constexpr (kCompare) {
      out.t.data[i] = r ? 1.0f : 0.0f;
    } else {
      out.t.data[i] = slot(r);
    }
  }
  return one(std::move(out));
}

template <typename R, R (*F)(U, U)>
constexpr Primitive binary() {
  return {&binary_infer<R, F>, &binary_eval<R, F>};
}

Types not_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  all_u32(eqn, in);
  return {in[0]};
}
Values not_eval(const Eqn&, std::span<Value* const> in, std::span<const bool> owned, PrimContext&) {
  Value out = pass_through(in[0], owned[0]);
  for (float& v : out.t.data) v = slot(~bits(v));
  return one(std::move(out));
}

// ---- population_count, clz: the result a uint32
template <U (*F)(U)>
Values unary_eval(const Eqn&, std::span<Value* const> in, std::span<const bool> owned,
                  PrimContext&) {
  Value out = pass_through(in[0], owned[0]);
  for (float& v : out.t.data) v = slot(F(bits(v)));
  return one(std::move(out));
}
U popcount(U a) { return static_cast<U>(std::popcount(a)); }
U clz(U a) { return static_cast<U>(std::countl_zero(a)); }

// ---- reduce_sum, reduce_prod (modulo 2^32), reduce_max, reduce_min (unsigned), argmax, argmin:
// the order of the fold changes none of them.
// The result's shape (prim_util.hpp's reduced_shape over the 'axes' param) and which
// dimensions it keeps.
Shape reduced(const Eqn& eqn, const Shape& in, std::vector<bool>* keep) {
  return reduced_shape(in, param_axis_list(eqn, "axes", in.size()), keep);
}

Types reduce_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  all_u32(eqn, in);
  std::vector<bool> keep;
  return {make_type(DType::kU32, reduced(eqn, in[0].shape, &keep))};
}
template <U (*F)(U, U), U kInit>
Values reduce_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                   PrimContext&) {
  const Value& x = *in[0];
  std::vector<bool> keep;
  Value out(DType::kU32, Tensor(reduced(eqn, x.t.shape, &keep)));
  std::vector<U> acc(out.t.size(), kInit);
  walk(x.t.shape, keep,
       [&](std::size_t i, std::size_t o) { acc[o] = F(acc[o], bits(x.t.data[i])); });
  for (std::size_t i = 0; i < acc.size(); ++i) out.t.data[i] = slot(acc[i]);
  return one(std::move(out));
}

Types arg_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  all_u32(eqn, in);
  const std::vector<std::size_t> axes = param_axis_list(eqn, "axes", in[0].shape.size());
  if (axes.size() != 1) fail(eqn.primitive + " takes exactly one axis in 'axes'");
  if (in[0].shape[axes[0]] == 0) fail(eqn.primitive + " of an empty axis");
  if (in[0].shape[axes[0]] > static_cast<std::size_t>(kMaxInt))
    fail(eqn.primitive + " axis beyond 2^24");
  if (param_dtype(eqn, "index_dtype") != DType::kI32)
    fail(eqn.primitive + " index_dtype must be i32");
  std::vector<bool> keep;
  return {make_type(DType::kI32, reduced(eqn, in[0].shape, &keep))};
}
// The first index of the largest (kMax) or smallest element along the one axis.
template <bool kMax>
Values arg_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Value& x = *in[0];
  const Shape& xs = x.t.shape;
  const std::size_t axis = param_axis_list(eqn, "axes", xs.size())[0];
  std::size_t inner = 1;
  for (std::size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
  const std::size_t len = xs[axis];
  std::vector<bool> keep;
  Value out(DType::kI32, Tensor(reduced(eqn, xs, &keep)));
  for (std::size_t o = 0; o < out.t.size(); ++o) {
    const float* s = x.t.data.data() + (o / inner) * len * inner + o % inner;
    U best = bits(s[0]);
    std::size_t at = 0;
    for (std::size_t k = 1; k < len; ++k) {
      const U v = bits(s[k * inner]);
      if (kMax ? v > best : v < best) {
        best = v;
        at = k;
      }
    }
    out.t.data[o] = static_cast<float>(at);
  }
  return one(std::move(out));
}

// ---- select_n: the registry's kernel copies the cases' bits; a uint32 predicate is JAX's error
Types select_n_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  if (!in.empty() && in[0].dtype == DType::kU32)
    fail("select_n requires a bool or int32 predicate, got uint32");
  return find_primitive("select_n")->infer(eqn, in, ctx);
}
Values select_n_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                     PrimContext& ctx) {
  return find_primitive("select_n")->eval(eqn, in, owned, ctx);
}

// ---- iota of uint32
Types iota_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  return find_primitive("iota")->infer(eqn, in, ctx);
}
Values iota_eval(const Eqn& eqn, std::span<Value* const>, std::span<const bool>, PrimContext& ctx) {
  const Shape shape = param_shape(eqn, "shape", ctx);
  const auto d = static_cast<std::size_t>(param_int(eqn, "dimension"));
  Value out(DType::kU32, Tensor(shape));
  const auto stride = static_cast<std::size_t>(strides_of(shape)[d]);
  for (std::size_t i = 0; i < out.t.size(); ++i)
    out.t.data[i] = slot(static_cast<U>((i / stride) % shape[d]));
  return one(std::move(out));
}

// ---- convert_element_type between uint32 and float32, int32, bool
bool convertible(DType t) {
  return t == DType::kU32 || t == DType::kF32 || t == DType::kI32 || t == DType::kBool;
}

Types convert_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  const DType to = param_dtype(eqn, "new_dtype");
  if (!convertible(in[0].dtype) || !convertible(to)) {
    fail(std::string("convert_element_type from ") + dtype_word(in[0].dtype) + " to " +
         dtype_word(to) + ": meshrun converts uint32 to and from float32, int32 and bool only");
  }
  return {make_type(to, in[0].shape)};
}

// float32 -> uint32 as XLA:CPU: toward zero, saturated, NaN -> 0.
U f32_to_u32(float v) {
  if (std::isnan(v) || v <= 0.0f) return 0;
  if (v >= 4294967296.0f) return 0xffffffffu;
  return static_cast<U>(v);
}

Values convert_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                    PrimContext&) {
  const DType from = in[0]->dtype, to = param_dtype(eqn, "new_dtype");
  Value out = pass_through(in[0], owned[0]);
  out.dtype = to;
  if (from == to) return one(std::move(out));
  if (from == DType::kU32 && to == DType::kI32) {  // the two's complement bits (int32_bits.hpp)
    out.dtype = DType::kU32;
    return one(int32_from_bits(std::move(out)));
  }
  for (float& v : out.t.data) {
    if (to == DType::kU32) {
      v = slot(from == DType::kF32 ? f32_to_u32(v) : as_bits(from, v));
    } else {
      const U u = bits(v);
      if (to == DType::kF32) v = static_cast<float>(u);
      if (to == DType::kBool) v = u != 0 ? 1.0f : 0.0f;
    }
  }
  return one(std::move(out));
}

// ---- bitcast_convert_type between float32, int32 and uint32 (the same 32 bits)
bool bitcastable(DType t) { return t == DType::kU32 || t == DType::kF32 || t == DType::kI32; }

Types bitcast_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  const DType to = param_dtype(eqn, "new_dtype");
  if (!bitcastable(in[0].dtype) || !bitcastable(to)) {
    fail(std::string("bitcast_convert_type from ") + dtype_word(in[0].dtype) + " to " +
         dtype_word(to) + ": meshrun bitcasts between float32, int32 and uint32 only");
  }
  return {make_type(to, in[0].shape)};
}

Values bitcast_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                    PrimContext&) {
  const DType from = in[0]->dtype, to = param_dtype(eqn, "new_dtype");
  Value out = pass_through(in[0], owned[0]);
  out.dtype = to;
  if (from == to) return one(std::move(out));
  for (float& v : out.t.data) v = slot(as_bits(from, v));
  if (to != DType::kI32) return one(std::move(out));
  // an int32 beyond 2^24 (a float's bits) held as its bits (int32_bits.hpp)
  out.dtype = DType::kU32;
  return one(int32_from_bits(std::move(out)));
}

const std::map<std::string_view, Primitive, std::less<>>& kernels() {
  static const std::map<std::string_view, Primitive, std::less<>> kTable = {
      {"add", binary<U, &add>()},
      {"sub", binary<U, &sub>()},
      {"mul", binary<U, &mul>()},
      {"div", binary<U, &udiv>()},
      {"rem", binary<U, &urem>()},
      {"population_count", {&not_infer, &unary_eval<&popcount>}},
      {"clz", {&not_infer, &unary_eval<&clz>}},
      {"reduce_sum", {&reduce_infer, &reduce_eval<&add, 0u>}},
      {"reduce_prod", {&reduce_infer, &reduce_eval<&mul, 1u>}},
      {"reduce_max", {&reduce_infer, &reduce_eval<&umax, 0u>}},
      {"reduce_min", {&reduce_infer, &reduce_eval<&umin, 0xffffffffu>}},
      {"argmax", {&arg_infer, &arg_eval<true>}},
      {"argmin", {&arg_infer, &arg_eval<false>}},
      {"and", binary<U, &band>()},
      {"or", binary<U, &bor>()},
      {"xor", binary<U, &bxor>()},
      {"shift_left", binary<U, &shl>()},
      {"shift_right_logical", binary<U, &shrl>()},
      {"shift_right_arithmetic", binary<U, &shra>()},
      {"max", binary<U, &umax>()},
      {"min", binary<U, &umin>()},
      {"eq", binary<bool, &eq>()},
      {"ne", binary<bool, &ne>()},
      {"lt", binary<bool, &lt>()},
      {"le", binary<bool, &le>()},
      {"gt", binary<bool, &gt>()},
      {"ge", binary<bool, &ge>()},
      {"not", {&not_infer, &not_eval}},
      {"select_n", {&select_n_infer, &select_n_eval}},
      {"iota", {&iota_infer, &iota_eval}},
      {"convert_element_type", {&convert_infer, &convert_eval}},
      {"bitcast_convert_type", {&bitcast_infer, &bitcast_eval}},
  };
  return kTable;
}

}  // namespace

std::span<const Entry> uint32_entries() {
  static const Entry kEntries[] = {
      {"bitcast_convert_type", {&bitcast_infer, &bitcast_eval}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim

namespace meshrun::interp {

const Primitive* u32_primitive(std::string_view primitive) {
  const auto& t = prim::kernels();
  const auto it = t.find(primitive);
  return it == t.end() ? nullptr : &it->second;
}

}  // namespace meshrun::interp
