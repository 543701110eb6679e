// cumsum, cumprod, cummax, cummin, cumlogsumexp (lib/interp/ops/cumulative.cpp): XLA:CPU's
// summation order (ops/scan.hpp), checked on sums whose order shows and whose results are worked
// out by hand below; JAX's own bits on every dtype are tests/jax/dtype_rules/cum*.
#include "interp/cost.hpp"
#include "unit/interp/primitives/prim_test_util.hpp"

namespace {

const float k24 = 16777216.0f;  // 2^24: 2^24 + 1 rounds to it (ties to even), 2^24 + 2 does not

Eqn cum(const std::string& name, std::int64_t axis, bool reverse) {
  return make(name, {{"axis", axis}, {"reverse", reverse}});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cumulative)

// 20 elements: chunk 0 is x[0..15], summed in order; chunk 1 is x[16..19] summed on its own from
// 0 and then added to chunk 0's total. [2^24, 1 x 19]: in order every + 1 is lost (2^24 + 1 rounds
// to 2^24); the tree gives 2^24 + (1, 2, 3, 4): 2^24, 2^24 + 2, 2^24 + 4 (2^24 + 3 rounds up to
// even), 2^24 + 4.
BOOST_AUTO_TEST_CASE(a_forward_scan_of_more_than_16_sums_by_chunks_of_16) {
  std::vector<float> x(20, 1.0f);
  x[0] = k24;
  std::vector<float> want(20, k24);
  want[17] = k24 + 2;
  want[18] = k24 + 4;
  want[19] = k24 + 4;
  check_bits(run1(cum("cumsum", 0, false), {F({20}, x)}), {20}, want);
  // The sequential sum would be 2^24 throughout (what the old evaluator's order would give).
}

// A reverse window folds x[i], x[i+1], ... left to right from 0, not from the end: [1, 2^24, 1, 1]
// gives ((1 + 2^24) + 1) + 1 = 2^24 at 0, where summing from the end gives 2^24 + 4.
BOOST_AUTO_TEST_CASE(a_reverse_scan_folds_each_window_left_to_right) {
  check_bits(run1(cum("cumsum", 0, true), {F({4}, {1, k24, 1, 1})}), {4}, {k24, k24, 2, 1});
  // Along axis 0 of a [4, 2]: each column on its own.
  check_bits(run1(cum("cumsum", 0, true), {F({4, 2}, {1, 1, k24, 2, 1, 3, 1, 4})}), {4, 2},
             {k24, 10, k24, 9, 2, 7, 1, 4});
}

BOOST_AUTO_TEST_CASE(max_min_and_prod_and_the_zeros_signs) {
  check_bits(run1(cum("cummax", 0, false), {F({4}, {-0.0f, 0.0f, -1.0f, 2.0f})}), {4},
             {-0.0f, 0.0f, 0.0f, 2.0f});
  check_bits(run1(cum("cummin", 0, false), {F({4}, {0.0f, -0.0f, 1.0f, -3.0f})}), {4},
             {0.0f, -0.0f, -0.0f, -3.0f});
  check_bits(run1(cum("cumprod", 0, true), {F({3}, {2, -0.0f, 3})}), {3}, {-0.0f, -0.0f, 3});
  // cumsum from +0: -0 + ... never stays -0 (JAX: cumsum([-0., -0.]) is [0., 0.]).
  check_bits(run1(cum("cumsum", 0, false), {F({2}, {-0.0f, -0.0f})}), {2}, {0.0f, 0.0f});
  // NaN propagates through max.
  const Value m = run1(cum("cummax", 0, false), {F({3}, {1, kNaN, 5})});
  BOOST_TEST(std::isnan(m.t.data[1]));
  BOOST_TEST(std::isnan(m.t.data[2]));
}

BOOST_AUTO_TEST_CASE(int32_is_exact_and_refused_beyond_2_24) {
  check_bits(run1(cum("cumsum", 0, false), {I({3}, {8388608, 8388607, -5})}), {3},
             {8388608, 16777215, 16777210});
  check_bits(run1(cum("cumprod", 0, true), {I({3}, {-2, 3, 4})}), {3}, {-24, 12, 4});
  BOOST_CHECK_THROW(run1(cum("cumsum", 0, false), {I({3}, {8388608, 8388608, 1})}), PrimitiveError);
  try {
    run1(cum("cumprod", 0, false), {I({2}, {4096, 4097})});
    BOOST_ERROR("cumprod beyond 2^24 accepted");
  } catch (const PrimitiveError& e) {
    CHECK_ERROR(e.what(), "cumprod: the integer result 16781312 is beyond 2^24");
  }
}

BOOST_AUTO_TEST_CASE(infer_checks_the_params_and_dtypes) {
  CHECK_ERROR(infer_error(cum("cumsum", 2, false), {F32({2, 3})}),
              "cumsum param 'axis': axis 2 is out of bounds for an array of rank 2");
  CHECK_ERROR(infer_error(cum("cumsum", -1, false), {F32({2, 3})}), "axis -1 is out of bounds");
  CHECK_ERROR(infer_error(cum("cummax", 0, false), {T(DType::kBool, {3})}),
              "cummax does not accept dtype bool");
  CHECK_ERROR(infer_error(cum("cumlogsumexp", 0, false), {T(DType::kI32, {3})}),
              "cumlogsumexp does not accept dtype int32");
  CHECK_ERROR(infer_error(cum("cumsum", 0, false), {F32({})}), "cumsum of a scalar");
  CHECK_ERROR(infer_error(make("cumsum", {{"axis", 0}, {"reverse", 1}}), {F32({3})}),
              "param 'reverse' must be a bool");
  CHECK_ERROR(infer_error(make("cumsum", {{"reverse", false}}), {F32({3})}),
              "param 'axis' missing");
  BOOST_TEST(infer_error(cum("cumsum", 1, true), {F32({2, 3})}) == "");
}

// Each element counts 5 ns (500 flops: bench/sort_bench); cumlogsumexp's 17 folds an exp and a
// log1p each besides.
BOOST_AUTO_TEST_CASE(the_budget_counts_every_fold) {
  CostMeter meter(CostBudget{});
  const ValueType big{DType::kF32, {std::size_t{1} << 30}};
  BOOST_CHECK_THROW(meter.add(cum("cumlogsumexp", 0, false), prim("cumlogsumexp"), {big}, {big}, 1),
                    InputError);
  CostMeter m2(CostBudget{UINT64_MAX, UINT64_MAX});
  const ValueType t{DType::kF32, {1000}};
  m2.add(cum("cumsum", 0, false), prim("cumsum"), {t}, {t}, 1);
  BOOST_TEST(m2.flops() == 500000u);
}

BOOST_AUTO_TEST_SUITE_END()
