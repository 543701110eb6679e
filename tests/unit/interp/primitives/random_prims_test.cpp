// Issue #49, jax.random: uint32 held as its bits (ops/uint32.cpp) and Threefry-2x32 with JAX's key
// primitives (ops/random.cpp). Expected values: Random123's known-answer vectors
// (random123/tests/kat_vectors, "threefry2x32 20": counter, key, result; JAX's random_test.py
// checks the third), and JAX 0.10.2 on CPU (jax.random.key_data / jax.random.bits / astype, pasted
// as printed).
#include <cstdint>

#include "interp/ops/random.hpp"
#include "unit/interp/primitives/prim_test_util.hpp"

namespace {

Value U32(Shape s, const std::vector<std::uint32_t>& d) {
  std::vector<float> slots;
  for (std::uint32_t u : d) slots.push_back(u32_to_slot(u));
  return Value(DType::kU32, Tensor(std::move(s), std::move(slots)));
}

std::vector<std::uint32_t> words(const Value& v) {
  BOOST_REQUIRE(v.dtype == DType::kU32);
  std::vector<std::uint32_t> out;
  for (float f : v.t.data) out.push_back(slot_to_u32(f));
  return out;
}

// An equation with a uint32 operand or result runs u32_primitive's kernel (the compiler's
// choice, compile.cpp); the others are the registry's.
Value run_u32(const Eqn& e, std::vector<Value> in) {
  const Primitive* p = u32_primitive(e.primitive);
  if (p == nullptr) p = find_primitive(e.primitive);
  BOOST_REQUIRE(p != nullptr);
  std::vector<ValueType> types;
  for (const Value& v : in) types.push_back(v.type());
  PrimContext ctx;
  const std::vector<ValueType> want = p->infer(e, types, ctx);
  std::vector<Value*> ptrs;
  for (Value& v : in) ptrs.push_back(&v);
  std::unique_ptr<bool[]> own(new bool[in.size() + 1]());
  std::vector<Value> out = p->eval(e, ptrs, std::span<const bool>(own.get(), in.size()), ctx);
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  BOOST_REQUIRE(out[0].type() == want[0]);
  return std::move(out[0]);
}

std::string u32_infer_error(const Eqn& e, std::vector<ValueType> in) {
  try {
    u32_primitive(e.primitive)->infer(e, in, {});
  } catch (const PrimitiveError& err) {
    return err.what();
  }
  return "";
}

using W = std::vector<std::uint32_t>;

}  // namespace

BOOST_AUTO_TEST_SUITE(random_prims)

BOOST_AUTO_TEST_CASE(threefry2x32_random123_known_answers) {
  // "threefry2x32 20 ctr0 ctr1 key0 key1 -> out0 out1"
  const auto a = threefry2x32(0, 0, 0, 0);
  BOOST_CHECK_EQUAL(a[0], 0x6b200159u);
  BOOST_CHECK_EQUAL(a[1], 0x99ba4efeu);
  const auto b = threefry2x32(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu);
  BOOST_CHECK_EQUAL(b[0], 0x1cb996fcu);
  BOOST_CHECK_EQUAL(b[1], 0xbb002be7u);
  const auto c = threefry2x32(0x13198a2eu, 0x03707344u, 0x243f6a88u, 0x85a308d3u);
  BOOST_CHECK_EQUAL(c[0], 0xc4923a9cu);
  BOOST_CHECK_EQUAL(c[1], 0x483df7a0u);
}

BOOST_AUTO_TEST_CASE(threefry2x32_primitive_elementwise_with_scalar_keys) {
  Eqn e = make("threefry2x32");
  std::vector<Value> in;
  in.push_back(U32({}, {0x13198a2eu}));
  in.push_back(U32({}, {0x03707344u}));
  in.push_back(U32({2}, {0x243f6a88u, 0}));
  in.push_back(U32({2}, {0x85a308d3u, 0}));
  std::vector<ValueType> types;
  for (const Value& v : in) types.push_back(v.type());
  const Primitive& p = prim("threefry2x32");
  BOOST_CHECK(p.infer(e, types, {}).size() == 2);
  std::vector<Value*> ptrs;
  for (Value& v : in) ptrs.push_back(&v);
  bool own[4] = {};
  PrimContext ctx;
  const std::vector<Value> out = p.eval(e, ptrs, std::span<const bool>(own, 4), ctx);
  BOOST_REQUIRE_EQUAL(out.size(), 2u);
  BOOST_CHECK_EQUAL(words(out[0])[0], 0xc4923a9cu);
  BOOST_CHECK_EQUAL(words(out[1])[0], 0x483df7a0u);
  CHECK_ERROR(infer_error(e, {T(DType::kU32, {}), T(DType::kU32, {}), T(DType::kI32, {2}),
                              T(DType::kU32, {2})}),
              "must have uint32 type");
}

BOOST_AUTO_TEST_CASE(key_primitives_as_jax) {
  // jax.random.key(0), key(-1), key(42): (0, the seed's bits)
  const Value k0 = run1(make("random_seed", {{"impl", "fry"}}), {I({}, {0})});
  BOOST_CHECK(words(k0) == (W{0, 0}));
  BOOST_CHECK(words(run1(make("random_seed", {{"impl", "fry"}}), {I({}, {-1})})) ==
              (W{0, 0xffffffffu}));
  BOOST_CHECK(words(run1(make("random_seed", {{"impl", "fry"}}), {I({}, {42})})) == (W{0, 42}));
  CHECK_ERROR(infer_error(make("random_seed", {{"impl", "rbg"}}), {T(DType::kI32, {})}), "fry");
  // jax.random.split(key(0), 3)
  const Value s = run1(make("random_split", {{"shape", {3}}}), {U32({2}, {0, 0})});
  BOOST_CHECK(s.t.shape == (Shape{3, 2}));
  BOOST_CHECK(words(s) ==
              (W{0x6b200159u, 0x99ba4efeu, 0x375f238fu, 0xcddb151du, 0xf71f4ea9u, 0xa20e4081u}));
  // jax.random.fold_in(key(0), 7)
  const Value f = run1(make("random_fold_in"), {U32({2}, {0, 0}), U32({}, {7})});
  BOOST_CHECK(words(f) == (W{0xa1ef7a4du, 0x116eb6b3u}));
  // jax.random.bits(key(0), (5,)) and its uint16 and uint8 forms
  const Value b =
      run1(make("random_bits", {{"bit_width", 32}, {"shape", {5}}}), {U32({2}, {0, 0})});
  BOOST_CHECK(words(b) == (W{0xf29a4fa7u, 0xfa843692u, 0x55110e28u, 0x77faa835u, 0x91e43bb7u}));
  const Value b16 =
      run1(make("random_bits", {{"bit_width", 16}, {"shape", {3}}}), {U32({2}, {0, 0})});
  BOOST_CHECK(b16.dtype == DType::kU16);
  check_bits(b16, {3}, {20391, 13970, 3624});
  const Value b8 =
      run1(make("random_bits", {{"bit_width", 8}, {"shape", {3}}}), {U32({2}, {0, 0})});
  check_bits(b8, {3}, {167, 146, 40});
  CHECK_ERROR(
      infer_error(make("random_bits", {{"bit_width", 64}, {"shape", {3}}}), {T(DType::kU32, {2})}),
      "bit_width 64");
  CHECK_ERROR(infer_error(make("random_split", {{"shape", {2}}}), {T(DType::kU32, {3})}),
              "key array");
  // a batch of keys: each split on its own
  const Value s2 = run1(make("random_split", {{"shape", {1}}}), {U32({2, 2}, {0, 0, 0, 0})});
  BOOST_CHECK(s2.t.shape == (Shape{2, 1, 2}));
  BOOST_CHECK(words(s2) == (W{0x6b200159u, 0x99ba4efeu, 0x6b200159u, 0x99ba4efeu}));
}

BOOST_AUTO_TEST_CASE(u32_arithmetic_modulo_2_32) {
  BOOST_CHECK(words(run_u32(make("add"), {U32({3}, {0xffffffffu, 0x80000000u, 1}),
                                          U32({3}, {1, 0x80000000u, 2})})) == (W{0, 0, 3}));
  BOOST_CHECK(words(run_u32(make("sub"), {U32({2}, {0, 5}), U32({2}, {1, 7})})) ==
              (W{0xffffffffu, 0xfffffffeu}));
  BOOST_CHECK(words(run_u32(make("mul"), {U32({2}, {0x10000u, 0xffffffffu}),
                                          U32({}, {0x10000u})})) == (W{0, 0xffff0000u}));
  BOOST_CHECK(words(run_u32(make("xor"), {U32({1}, {0xf0f0f0f0u}), U32({1}, {0xffff0000u})})) ==
              (W{0x0f0ff0f0u}));
  BOOST_CHECK(words(run_u32(make("not"), {U32({2}, {0, 0x7fffffffu})})) ==
              (W{0xffffffffu, 0x80000000u}));
  BOOST_CHECK(words(run_u32(make("max"), {U32({2}, {0x80000000u, 3}), U32({2}, {1, 4})})) ==
              (W{0x80000000u, 4}));
}

BOOST_AUTO_TEST_CASE(u32_shifts_by_32_and_more) {
  const Value x = U32({4}, {0x80000001u, 0x80000001u, 0x80000001u, 0x80000001u});
  const Value by = U32({4}, {1, 31, 32, 0xffffffffu});
  BOOST_CHECK(words(run_u32(make("shift_left"), {x, by})) == (W{2, 0x80000000u, 0, 0}));
  BOOST_CHECK(words(run_u32(make("shift_right_logical"), {x, by})) == (W{0x40000000u, 1, 0, 0}));
  // JAX 0.10.2: shift_right_arithmetic of uint32 0x80000000 by 3 is 4026531840, by 40 4294967295
  BOOST_CHECK(words(run_u32(make("shift_right_arithmetic"), {x, by})) ==
              (W{0xc0000000u, 0xffffffffu, 0xffffffffu, 0xffffffffu}));
}

BOOST_AUTO_TEST_CASE(u32_compares_unsigned) {
  const Value lt =
      run_u32(make("lt"), {U32({3}, {1, 0x80000000u, 7}), U32({3}, {0x80000000u, 1, 7})});
  BOOST_CHECK(lt.dtype == DType::kBool);
  check_bits(lt, {3}, {1, 0, 0});
  check_bits(run_u32(make("ge"), {U32({2}, {0xffffffffu, 0}), U32({}, {0xfffffffeu})}), {2},
             {1, 0});
  CHECK_ERROR(u32_infer_error(make("add"), {T(DType::kU32, {2}), T(DType::kI32, {2})}),
              "same dtype");
}

BOOST_AUTO_TEST_CASE(u32_conversions_as_jax) {
  // f32 -> u32, JAX 0.10.2: [-1.5, -0.5, nan, 5e9, 4294967040, 4294967296, 3.7, -inf, inf, 1e-40]
  // -> [0, 0, 0, 4294967295, 4294967040, 4294967295, 3, 0, 4294967295, 0]
  const Value f =
      F({10}, {-1.5f, -0.5f, kNaN, 5e9f, 4294967040.0f, 4294967296.0f, 3.7f, -kInf, kInf, 1e-40f});
  BOOST_CHECK(words(run_u32(make("convert_element_type", {{"new_dtype", "u32"}}), {f})) ==
              (W{0, 0, 0, 0xffffffffu, 4294967040u, 0xffffffffu, 3, 0, 0xffffffffu, 0}));
  // u32 -> f32: [4294967295, 4294967167, 4294967168, 16777217] -> 4.2949673e+09, 4.2949670e+09,
  // 4.2949673e+09, 1.6777216e+07 (rounded to nearest even)
  check_bits(run_u32(make("convert_element_type", {{"new_dtype", "f32"}}),
                     {U32({4}, {0xffffffffu, 0xffffff7fu, 0xffffff80u, 16777217u})}),
             {4}, {4294967296.0f, 4294967040.0f, 4294967296.0f, 16777216.0f});
  // i32 -> u32: [-1, -5, 7] -> [4294967295, 4294967291, 7]
  BOOST_CHECK(words(run_u32(make("convert_element_type", {{"new_dtype", "u32"}}),
                            {I({3}, {-1, -5, 7})})) == (W{0xffffffffu, 0xfffffffbu, 7}));
  check_bits(run_u32(make("convert_element_type", {{"new_dtype", "i32"}}), {U32({2}, {5, 0})}), {2},
             {5, 0});
  // an int32 beyond 2^24: held as its bits (int32_bits.hpp), never rounded
  const Value wide =
      run_u32(make("convert_element_type", {{"new_dtype", "i32"}}), {U32({1}, {0x80000000u})});
  BOOST_CHECK(wide.bits32);
  BOOST_CHECK_EQUAL(slot_to_u32(wide.t.data[0]), 0x80000000u);
  CHECK_ERROR(
      u32_infer_error(make("convert_element_type", {{"new_dtype", "bf16"}}), {T(DType::kU32, {2})}),
      "uint32 to and from");
}

BOOST_AUTO_TEST_CASE(bitcast_keeps_every_bit) {
  // NaN payloads, a signalling NaN, -0, a subnormal: the same 32 bits both ways
  const W pats{0x7fc00001u, 0x7f800001u, 0xffffffffu, 0x80000000u, 0x00000001u, 0x3f800000u};
  const Value u = U32({6}, pats);
  const Value f = run_u32(make("bitcast_convert_type", {{"new_dtype", "f32"}}), {u});
  BOOST_CHECK(f.dtype == DType::kF32);
  for (std::size_t i = 0; i < pats.size(); ++i) {
    std::uint32_t b;
    std::memcpy(&b, &f.t.data[i], 4);
    BOOST_CHECK_EQUAL(b, pats[i]);
  }
  BOOST_CHECK(words(run_u32(make("bitcast_convert_type", {{"new_dtype", "u32"}}), {f})) == pats);
  // i32 <-> u32: two's complement
  BOOST_CHECK(words(run_u32(make("bitcast_convert_type", {{"new_dtype", "u32"}}),
                            {I({2}, {-1, 3})})) == (W{0xffffffffu, 3}));
  // f32 -> i32 through the registry (no uint32): 1.0f's bits are 1065353216, beyond 2^24, held
  // as its bits (int32_bits.hpp); -0.0f and a subnormal's are within 2^24 and held as values
  const Value big = run1(make("bitcast_convert_type", {{"new_dtype", "i32"}}), {F({1}, {1.0f})});
  BOOST_CHECK(big.dtype == DType::kI32 && big.bits32);
  BOOST_CHECK_EQUAL(slot_to_u32(big.t.data[0]), 0x3f800000u);
  const Value small =
      run1(make("bitcast_convert_type", {{"new_dtype", "i32"}}), {F({2}, {1e-44f, 0.0f})});
  BOOST_CHECK(!small.bits32);
  check_bits(small, {2}, {7.0f, 0.0f});
  check_bits(run1(make("bitcast_convert_type", {{"new_dtype", "f32"}}), {I({1}, {1})}), {1},
             {1e-45f});
}

BOOST_AUTO_TEST_CASE(u32_iota_and_moves_keep_bits) {
  const Value io =
      run_u32(make("iota", {{"dtype", "u32"}, {"shape", {2, 3}}, {"dimension", 1}}), {});
  BOOST_CHECK(words(io) == (W{0, 1, 2, 0, 1, 2}));
  // the registry's reshape and concatenate copy the slots: every bit kept
  const Value x = U32({2}, {0x7f800001u, 0xffffffffu});
  const Value c = run1(make("concatenate", {{"dimension", 0}}), {x, x});
  BOOST_CHECK(words(c) == (W{0x7f800001u, 0xffffffffu, 0x7f800001u, 0xffffffffu}));
  const Value r = run1(make("reshape", {{"new_sizes", {2, 2}}, {"dimensions", nullptr}}), {c});
  BOOST_CHECK(words(r) == words(c));
}

// Operands broadcast dimensions of 1 only (jax.random.randint's `rem u32[16] u32[1]`); other
// shapes, a reduction's axes and argmax's limits are refused when the types are inferred.
BOOST_AUTO_TEST_CASE(u32_shapes_reductions_and_their_limits) {
  BOOST_CHECK(words(run_u32(make("rem"), {U32({2, 3}, {7, 8, 9, 10, 11, 12}),
                                          U32({1, 3}, {2, 3, 4})})) == (W{1, 2, 1, 0, 2, 0}));
  BOOST_CHECK(words(run_u32(make("div"), {U32({2, 1}, {0xffffffffu, 9}), U32({1, 2}, {2, 0})})) ==
              (W{0x7fffffffu, 0xffffffffu, 4, 0xffffffffu}));
  CHECK_ERROR(u32_infer_error(make("add"), {T(DType::kU32, {2, 3}), T(DType::kU32, {3, 2})}),
              "add requires arguments of the same shape, got (2, 3), (3, 2)");
  CHECK_ERROR(u32_infer_error(make("add"), {T(DType::kU32, {2, 3}), T(DType::kU32, {3})}),
              "requires arguments of the same shape");
  // Axes 0 and 2 of [2, 2, 2] (walk's strides over the kept axis): sums modulo 2^32, unsigned max.
  const Value x = U32({2, 2, 2}, {1, 2, 3, 4, 0xffffffffu, 6, 7, 0x80000000u});
  BOOST_CHECK(words(run_u32(make("reduce_sum", {{"axes", {0, 2}}}), {x})) ==
              (W{1 + 2 + 0xffffffffu + 6, 3 + 4 + 7 + 0x80000000u}));
  BOOST_CHECK(words(run_u32(make("reduce_max", {{"axes", {0, 2}}}), {x})) ==
              (W{0xffffffffu, 0x80000000u}));
  BOOST_CHECK(words(run_u32(make("reduce_min", {{"axes", {1}}}), {x})) == (W{1, 2, 7, 6}));
  // argmax: the first index of the largest, unsigned (0x80000000 > 7)
  const json arg = {{"axes", {1}}, {"index_dtype", "i32"}};
  check_bits(run_u32(make("argmax", arg), {U32({2, 3}, {5, 0x80000000u, 0x80000000u, 1, 1, 0})}),
             {2}, {1, 0});
  CHECK_ERROR(u32_infer_error(make("argmax", arg), {T(DType::kU32, {2, 0})}),
              "argmax of an empty axis");
  CHECK_ERROR(u32_infer_error(make("argmin", {{"axes", {0}}, {"index_dtype", "i32"}}),
                              {T(DType::kU32, {(std::size_t{1} << 24) + 1})}),
              "argmin axis beyond 2^24");
  CHECK_ERROR(u32_infer_error(make("argmax", {{"axes", {0, 1}}, {"index_dtype", "i32"}}),
                              {T(DType::kU32, {2, 2})}),
              "takes exactly one axis");
}

BOOST_AUTO_TEST_SUITE_END()
