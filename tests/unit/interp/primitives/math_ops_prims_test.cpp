// Issue #49's primitives: the int32 bit ops (lib/interp/ops/bit_ops.cpp), conv_general_dilated
// and rev (ops/conv.cpp), the float math family's refusals (ops/float_math.cpp). Expected values
// are JAX 0.10.2's on CPU (jax.lax on the same inputs), small enough to read; the float math
// family's bits against JAX are tests/jax/dtype_rules/ (make test, jax_dtype_rules_cli_test).
#include "unit/interp/primitives/prim_test_util.hpp"

namespace {

bool beyond_2_24(const PrimitiveError& e) {
  return std::string(e.what()).find("beyond 2^24") != std::string::npos;
}

Eqn conv(json params) { return make("conv_general_dilated", std::move(params)); }

}  // namespace

BOOST_AUTO_TEST_SUITE(math_ops)

BOOST_AUTO_TEST_CASE(bit_ops_on_int32_as_jax) {
  check_bits(run1(make("population_count"), {I({5}, {-1, 0, 7, -16777216, 255})}), {5},
             {32, 0, 3, 8, 8});
  check_bits(run1(make("clz"), {I({5}, {0, 1, -1, 16777215, 256})}), {5}, {32, 31, 0, 8, 23});
  // Amounts of 32 and more (and negative ones, unsigned) shift everything out.
  check_bits(run1(make("shift_left"), {I({4}, {3, -5, 7, 1}), I({4}, {2, 1, 32, -1})}), {4},
             {12, -10, 0, 0});
  check_bits(run1(make("shift_right_logical"), {I({3}, {-1, 100, 9}), I({3}, {8, 2, 40})}), {3},
             {16777215, 25, 0});
  check_bits(run1(make("shift_right_arithmetic"), {I({4}, {-5, -5, 100, 7}), I({}, {40})}), {4},
             {-1, -1, 0, 0});
  check_bits(run1(make("shift_right_arithmetic"), {I({2}, {-5, 100}), I({2}, {1, 3})}), {2},
             {-3, 12});
}

BOOST_AUTO_TEST_CASE(a_bit_op_result_beyond_2_24_is_refused_not_rounded) {
  // JAX: shift_left(1, 30) = 1073741824 and shift_right_logical(-1, 1) = 2^31 - 1, which a float32
  // cannot hold exactly.
  BOOST_CHECK_EXCEPTION(run1(make("shift_left"), {I({1}, {1}), I({1}, {30})}), PrimitiveError,
                        beyond_2_24);
  BOOST_CHECK_EXCEPTION(run1(make("shift_right_logical"), {I({1}, {-1}), I({1}, {1})}),
                        PrimitiveError, beyond_2_24);
  CHECK_ERROR(infer_error(make("clz"), {F32({2})}), "clz does not accept dtype float32");
  CHECK_ERROR(infer_error(make("shift_left"), {T(DType::kI32, {2}), T(DType::kI32, {3})}),
              "same shape");
}

BOOST_AUTO_TEST_CASE(the_float_math_family_takes_float32_only) {
  for (const char* name : {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
                           "lgamma", "digamma"})
    CHECK_ERROR(infer_error(make(name), {T(DType::kI32, {2})}),
                std::string(name) + " does not accept dtype int32");
  // A few of JAX's: lgamma(1) is not 0 but 2^-21 in its Lanczos sum.
  check_bits(run1(make("sinh"), {F({2}, {0.0f, -0.0f})}), {2}, {0.0f, -0.0f});
  check_bits(run1(make("cosh"), {F({1}, {0.0f})}), {1}, {1.0f});
  check_bits(run1(make("atanh"), {F({3}, {2.0f, 1.0f, -1.0f})}), {3}, {kNaN, kInf, -kInf});
  check_bits(run1(make("lgamma"), {F({3}, {1.0f, 2.0f, -kInf})}), {3},
             {4.76837158e-07f, 0.0f, kInf});
  check_bits(run1(make("digamma"), {F({2}, {0.0f, -3.0f})}), {2}, {kNaN, kNaN});
}

BOOST_AUTO_TEST_CASE(conv_forms_as_jax) {
  const Value x = F({1, 1, 5}, {1, 2, 3, 4, 5});
  const Value w = F({1, 1, 3}, {1, 0, -1});
  // jax.lax.conv_general_dilated(x, w, (1,), ((1, 1),)) and friends, JAX 0.10.2.
  check_bits(run1(conv({{"window_strides", {1}}, {"padding", {{1, 1}}}}), {x, w}), {1, 1, 5},
             {-2, -2, -2, -2, 4});
  check_bits(
      run1(conv({{"window_strides", {1}}, {"padding", {{0, 0}}}, {"lhs_dilation", {2}}}), {x, w}),
      {1, 1, 7}, {-1, 0, -1, 0, -1, 0, -1});
  check_bits(
      run1(conv({{"window_strides", {2}}, {"padding", {{1, 1}}}, {"rhs_dilation", {2}}}), {x, w}),
      {1, 1, 2}, {-4, 2});
  // Two feature groups of one input feature each.
  check_bits(run1(conv({{"padding", {{0, 0}}}, {"feature_group_count", 2}}),
                  {F({1, 2, 3}, {1, 2, 3, 10, 20, 30}), F({2, 1, 1}, {2, 3})}),
             {1, 2, 3}, {2, 4, 6, 30, 60, 90});
  // Two batch groups: output features 0-1 read batches 0-1, features 2-3 batches 2-3.
  check_bits(run1(conv({{"padding", {{0, 0}}}, {"batch_group_count", 2}}),
                  {F({4, 1, 2}, {1, 2, 5, 6, 7, 8, 9, 11}), F({4, 1, 1}, {1, 10, 100, 1000})}),
             {2, 4, 2}, {1, 2, 10, 20, 700, 800, 7000, 8000, 5, 6, 50, 60, 900, 1100, 9000, 11000});
  // dimension_numbers: x as NWC and w as WIO (the layout of flax's Conv), the result as NWC.
  const json nwc = {{"lhs_spec", {0, 2, 1}}, {"rhs_spec", {2, 1, 0}}, {"out_spec", {0, 2, 1}}};
  check_bits(run1(conv({{"padding", {{1, 1}}}, {"dimension_numbers", nwc}}),
                  {F({1, 5, 1}, {1, 2, 3, 4, 5}), F({3, 1, 1}, {1, 0, -1})}),
             {1, 5, 1}, {-2, -2, -2, -2, 4});
}

BOOST_AUTO_TEST_CASE(a_conv_of_10_12_outputs_is_refused_before_it_runs) {
  // f32[1,1,1000,1000] dilated 1000 times each way: an output of about 10^12 elements.
  CHECK_ERROR(infer_error(conv({{"window_strides", {1, 1}},
                                {"padding", {{0, 0}, {0, 0}}},
                                {"lhs_dilation", {1000, 1000}}}),
                          {F32({1, 1, 1000, 1000}), F32({1, 1, 1, 1})}),
              "2^31");
  CHECK_ERROR(infer_error(conv({{"padding", {{0, 0}}}, {"feature_group_count", 3}}),
                          {F32({1, 4, 5}), F32({2, 2, 1})}),
              "feature_group_count");
  CHECK_ERROR(infer_error(conv({{"padding", {{0, 0}}}}), {F32({1, 4, 5}), F32({2, 2, 1, 1})}),
              "one rank");
  CHECK_ERROR(infer_error(conv({{"padding", {{0, 0}}}}),
                          {T(DType::kI32, {1, 1, 5}), T(DType::kI32, {1, 1, 1})}),
              "does not accept dtype int32");
  // The budget counts 2 flops a multiply-add: 2 x 5 outputs x 3 taps.
  const Primitive& p = prim("conv_general_dilated");
  BOOST_REQUIRE(p.flops != nullptr);
  const ValueType out = F32({1, 1, 5});
  const std::vector<ValueType> ops{F32({1, 1, 5}), F32({1, 1, 3})};
  BOOST_TEST(p.flops(conv({{"padding", {{1, 1}}}}), ops, std::span<const ValueType>(&out, 1)) ==
             30u);
}

BOOST_AUTO_TEST_CASE(rev_reverses_the_named_dimensions) {
  check_bits(run1(make("rev", {{"dimensions", {0}}}), {F({3}, {1, 2, 3})}), {3}, {3, 2, 1});
  check_bits(run1(make("rev", {{"dimensions", {0, 1}}}), {F({2, 2}, {1, 2, 3, 4})}), {2, 2},
             {4, 3, 2, 1});
  check_bits(run1(make("rev", {{"dimensions", {1}}}), {I({2, 3}, {1, 2, 3, 4, 5, 6})}), {2, 3},
             {3, 2, 1, 6, 5, 4});
}

BOOST_AUTO_TEST_SUITE_END()
