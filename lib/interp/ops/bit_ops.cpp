// The integer bit primitives on int32 (and i8, u8, i16, u16: issue #49, each on its own width, the
// result wrapped into the dtype): population_count, clz, shift_left, shift_right_logical,
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

// The value's bits in its dtype's width (issue #49: i8 ... u16 besides int32), as an unsigned
// number below 2^bits.
int width(DType t) { return t == DType::kI32 ? 32 : dtype_info(t).bits; }
std::uint32_t bits_of(float v, int bits) {
  const auto u = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
  return static_cast<std::uint32_t>(bits == 32 ? u & 0xFFFFFFFFu : u & ((1u << bits) - 1u));
}
// Those bits as a signed number of that width.
std::int64_t signed_of(std::uint32_t u, int bits) {
  const std::int64_t sign = std::int64_t{1} << (bits - 1);
  return (static_cast<std::int64_t>(u) ^ sign) - sign;
}

// Each gives the result's bits (any int64 whose low `bits` are they).
std::int64_t popcount(std::uint32_t a, int) { return std::popcount(a); }
std::int64_t clz(std::uint32_t a, int bits) { return std::countl_zero(a) - (32 - bits); }

std::int64_t shift_left(std::uint32_t a, std::uint32_t b, int bits) {
  return b < static_cast<std::uint32_t>(bits) ? static_cast<std::int64_t>(std::uint64_t{a} << b)
                                              : 0;
}
std::int64_t shift_right_logical(std::uint32_t a, std::uint32_t b, int bits) {
  return b < static_cast<std::uint32_t>(bits) ? a >> b : 0;
}
std::int64_t shift_right_arithmetic(std::uint32_t a, std::uint32_t b, int bits) {
  const std::int64_t s = signed_of(a, bits);
  return b < static_cast<std::uint32_t>(bits) ? s >> b : (s < 0 ? -1 : 0);
}

// The result's bits as a value of dtype t: int32 refused beyond 2^24; i8 ... u16 wrapped.
float finish(DType t, std::int64_t r, const Eqn& eqn) {
  if (t == DType::kI32)
    return int_result(static_cast<std::int32_t>(static_cast<std::uint32_t>(r)), eqn);
  return dtype_info(t).wrap(r);
}

template <std::int64_t (*F)(std::uint32_t, int)>
Types unary_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  check_dtype(eqn, in[0].dtype, kI);
  return {make_type(in[0].dtype, in[0].shape)};
}

template <std::int64_t (*F)(std::uint32_t, int)>
Values unary_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                  PrimContext&) {
  Value out = pass_through(in[0], owned[0]);
  const int bits = width(out.dtype);
  for (float& v : out.t.data) v = finish(out.dtype, F(bits_of(v, bits), bits), eqn);
  return one(std::move(out));
}

// Two integer operands of one dtype and one shape, or one of them a scalar (a literal shift
// amount).
template <std::int64_t (*F)(std::uint32_t, std::uint32_t, int)>
Types binary_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 2);
  check_dtype(eqn, in[0].dtype, kI);
  check_dtype(eqn, in[1].dtype, kI);
  if (in[0].dtype != in[1].dtype)
    fail(eqn.primitive + " requires arguments of the same dtype, got " + dtype_word(in[0].dtype) +
         ", " + dtype_word(in[1].dtype));
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  if (a != b && !a.empty() && !b.empty())
    fail(eqn.primitive + " requires arguments of the same shape, got " + dims_str(a) + ", " +
         dims_str(b));
  return {make_type(in[0].dtype, a.empty() ? b : a)};
}

template <std::int64_t (*F)(std::uint32_t, std::uint32_t, int)>
Values binary_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                   PrimContext&) {
  const Value& a = *in[0];
  const Value& b = *in[1];
  const bool a_scalar = a.t.shape.empty(), b_scalar = b.t.shape.empty();
  Value out(a.dtype, Tensor(a_scalar ? b.t.shape : a.t.shape));
  const int bits = width(a.dtype);
  const std::size_t n = out.t.size();
  for (std::size_t i = 0; i < n; ++i) {
    const float x = a.t.data[a_scalar ? 0 : i], y = b.t.data[b_scalar ? 0 : i];
    out.t.data[i] = finish(a.dtype, F(bits_of(x, bits), bits_of(y, bits), bits), eqn);
  }
  return one(std::move(out));
}

template <std::int64_t (*F)(std::uint32_t, int)>
constexpr Primitive bit_unary() {
  return {&unary_infer<F>, &unary_eval<F>};
}
template <std::int64_t (*F)(std::uint32_t, std::uint32_t, int)>
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
