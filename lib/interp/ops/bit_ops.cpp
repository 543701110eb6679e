// The integer bit primitives on int32: population_count, clz, shift_left, shift_right_logical,
// shift_right_arithmetic (and, or, xor and not are elementwise.cpp's and unary.cpp's). Each works
// on the value's 32 bits in two's complement, as XLA's elemental emitter: a shift by an amount
// that is not below 32 as an unsigned number (a negative one included) gives 0, or -1 for an
// arithmetic right shift of a negative value; clz(0) is 32.
//
// meshrun holds an int32 in a float (value.hpp), exactly up to 2^24 in magnitude: a result beyond
// (shift_left(1, 30), shift_right_logical(-1, 1)) is refused when it is computed, exit 2, naming
// the primitive -- never a rounded value.
#include <bit>
#include <cstdint>

#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {
namespace {

std::uint32_t bits_of(float v) {
  return static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<std::int64_t>(v)));
}
std::int64_t as_i32(std::uint32_t u) { return static_cast<std::int32_t>(u); }

std::int64_t popcount(std::uint32_t a) { return std::popcount(a); }
std::int64_t clz(std::uint32_t a) { return std::countl_zero(a); }

std::int64_t shift_left(std::uint32_t a, std::uint32_t b) { return b < 32 ? as_i32(a << b) : 0; }
std::int64_t shift_right_logical(std::uint32_t a, std::uint32_t b) {
  return b < 32 ? as_i32(a >> b) : 0;
}
std::int64_t shift_right_arithmetic(std::uint32_t a, std::uint32_t b) {
  const std::int32_t s = static_cast<std::int32_t>(a);
  return b < 32 ? s >> b : (s < 0 ? -1 : 0);
}

template <std::int64_t (*F)(std::uint32_t)>
Types unary_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  check_dtype(eqn, in[0].dtype, kI);
  return {make_type(in[0].dtype, in[0].shape)};
}

template <std::int64_t (*F)(std::uint32_t)>
Values unary_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                  PrimContext&) {
  Value out = pass_through(in[0], owned[0]);
  for (float& v : out.t.data) v = int_result(F(bits_of(v)), eqn);
  return one(std::move(out));
}

// Two int32 operands of one shape, or one of them a scalar (a literal shift amount).
template <std::int64_t (*F)(std::uint32_t, std::uint32_t)>
Types binary_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 2);
  check_dtype(eqn, in[0].dtype, kI);
  check_dtype(eqn, in[1].dtype, kI);
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  if (a != b && !a.empty() && !b.empty())
    fail(eqn.primitive + " requires arguments of the same shape, got " + dims_str(a) + ", " +
         dims_str(b));
  return {make_type(DType::kI32, a.empty() ? b : a)};
}

template <std::int64_t (*F)(std::uint32_t, std::uint32_t)>
Values binary_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                   PrimContext&) {
  const Value& a = *in[0];
  const Value& b = *in[1];
  const bool a_scalar = a.t.shape.empty(), b_scalar = b.t.shape.empty();
  Value out(DType::kI32, Tensor(a_scalar ? b.t.shape : a.t.shape));
  const std::size_t n = out.t.size();
  for (std::size_t i = 0; i < n; ++i) {
    const float x = a.t.data[a_scalar ? 0 : i], y = b.t.data[b_scalar ? 0 : i];
    out.t.data[i] = int_result(F(bits_of(x), bits_of(y)), eqn);
  }
  return one(std::move(out));
}

template <std::int64_t (*F)(std::uint32_t)>
constexpr Primitive bit_unary() {
  return {&unary_infer<F>, &unary_eval<F>};
}
template <std::int64_t (*F)(std::uint32_t, std::uint32_t)>
constexpr Primitive bit_binary() {
  return {&binary_infer<F>, &binary_eval<F>};
}

}  // namespace

std::span<const Entry> bit_entries() {
  static const Entry kEntries[] = {
      {"population_count", bit_unary<&popcount>()},
      {"clz", bit_unary<&clz>()},
      {"shift_left", bit_binary<&shift_left>()},
      {"shift_right_logical", bit_binary<&shift_right_logical>()},
      {"shift_right_arithmetic", bit_binary<&shift_right_arithmetic>()},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
