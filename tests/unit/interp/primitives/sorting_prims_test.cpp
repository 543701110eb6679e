// sort, top_k, approx_top_k, rev (lib/interp/ops/sorting.cpp): JAX's orders, worked out by hand
// (NaN, -0.0, ties), the params' checks, and the budget's refusal of a sort of 10^9 elements. JAX's
// own results on every dtype are tests/jax/dtype_rules/{sort,argsort,top_k,approx_top_k}-*.
#include "interp/cost.hpp"
#include "unit/interp/primitives/prim_test_util.hpp"

namespace {

Eqn sort_eqn(std::int64_t dim, std::int64_t keys, bool stable = true) {
  return make("sort", {{"dimension", dim}, {"num_keys", keys}, {"is_stable", stable}});
}

const float kNegNaN = std::copysign(kNaN, -1.0f);

}  // namespace

BOOST_AUTO_TEST_SUITE(sorting)

// JAX's comparator: -0.0 and 0.0 equal (kept in their order), every NaN equal and last.
BOOST_AUTO_TEST_CASE(sort_orders_floats_as_jax_total_order_with_zeros_equal) {
  const std::vector<Value> out = run_raw(
      sort_eqn(0, 1),
      {F({7}, {kNaN, 1, -0.0f, 0.0f, -kInf, -0.0f, kNegNaN}), I({7}, {0, 1, 2, 3, 4, 5, 6})});
  BOOST_REQUIRE_EQUAL(out.size(), 2u);
  check_bits(out[1], {7}, {4, 2, 3, 5, 1, 0, 6});
  check_bits(out[0], {7}, {-kInf, -0.0f, 0.0f, -0.0f, 1, kNaN, kNaN});
  // Along dimension 1 of a [2, 3], each row on its own.
  check_bits(run1(sort_eqn(1, 1), {F({2, 3}, {3, 1, 2, -1, -3, -2})}), {2, 3},
             {1, 2, 3, -3, -2, -1});
  check_bits(run1(sort_eqn(0, 1), {F({2, 3}, {3, 1, 2, -1, -3, -2})}), {2, 3},
             {-1, -3, -2, 3, 1, 2});
}

BOOST_AUTO_TEST_CASE(several_keys_are_lexicographic) {
  const std::vector<Value> out =
      run_raw(sort_eqn(0, 2),
              {I({5}, {2, 1, 2, 1, 2}), F({5}, {0.5f, 9, -1, 9, 0.5f}), I({5}, {0, 1, 2, 3, 4})});
  check_bits(out[2], {5}, {1, 3, 2, 0, 4});
  check_bits(out[0], {5}, {1, 1, 2, 2, 2});
}

BOOST_AUTO_TEST_CASE(sort_checks_its_params) {
  CHECK_ERROR(infer_error(sort_eqn(0, 0), {F32({3})}), "sort param 'num_keys': 0 keys of 1");
  CHECK_ERROR(infer_error(sort_eqn(0, 3), {F32({3}), F32({3})}), "3 keys of 2 operands");
  CHECK_ERROR(infer_error(sort_eqn(1, 1), {F32({3})}), "sort param 'dimension': axis 1");
  CHECK_ERROR(infer_error(sort_eqn(0, 1), {F32({3}), F32({4})}),
              "sort: operand 1 has shape (4,), operand 0 (3,)");
  CHECK_ERROR(infer_error(sort_eqn(0, 1), {F32({})}), "sort of a scalar");
  CHECK_ERROR(infer_error(make("sort", {{"dimension", 0}}), {F32({3})}), "'num_keys' missing");
  BOOST_TEST(infer_error(sort_eqn(0, 1, false), {T(DType::kBool, {3})}) == "");
}

// XLA:CPU's TopK: the bits' total order (-NaN < -inf < -0.0 < 0.0 < inf < NaN), ties lowest index
// first -- JAX 0.10.2's top_k of this row gives these values and indices.
BOOST_AUTO_TEST_CASE(top_k_orders_by_bits_ties_lowest_index_first) {
  const Eqn e = make("top_k", {{"k", 10}, {"axis", 0}});
  const std::vector<Value> out =
      run_raw(e, {F({10}, {1, kNaN, -0.0f, 0.0f, 3, 3, kNegNaN, kInf, -kInf, 0.0f})});
  check_bits(out[1], {10}, {1, 7, 4, 5, 0, 3, 9, 2, 8, 6});
  check_bits(out[0], {10}, {kNaN, kInf, 3, 3, 1, 0.0f, 0.0f, -0.0f, -kInf, kNaN});
  BOOST_TEST(std::signbit(out[0].t.data[9]));
  BOOST_CHECK(out[1].dtype == DType::kI32);
  // k of the last axis when `axis` is absent (JAX before 0.6); rows on their own.
  const std::vector<Value> r = run_raw(make("top_k", {{"k", 1}}), {I({2, 3}, {1, 5, 5, 7, 2, 7})});
  check_bits(r[0], {2, 1}, {5, 7});
  check_bits(r[1], {2, 1}, {1, 0});
}

BOOST_AUTO_TEST_CASE(top_k_checks_its_params) {
  CHECK_ERROR(infer_error(make("top_k", {{"k", 4}, {"axis", 0}}), {F32({3})}),
              "top_k param 'k': 4 of an axis of 3 elements");
  CHECK_ERROR(infer_error(make("top_k", {{"k", -1}}), {F32({3})}), "top_k param 'k': -1");
  CHECK_ERROR(infer_error(make("top_k", {{"k", 1}, {"axis", 1}}), {F32({3})}),
              "top_k param 'axis': axis 1");
  CHECK_ERROR(infer_error(make("top_k", {{"k", 1}}), {T(DType::kBool, {3})}),
              "top_k does not accept dtype bool");
  CHECK_ERROR(
      infer_error(make("approx_top_k",
                       {{"k", 1}, {"reduction_dimension", -1}, {"aggregate_to_topk", false}}),
                  {F32({3})}),
      "aggregate_to_topk false");
  CHECK_ERROR(infer_error(make("approx_top_k", {{"k", 1}, {"reduction_dimension", -1}}),
                          {T(DType::kI32, {3})}),
              "approx_top_k does not accept dtype int32");
}

// approx_top_k on CPU: std::sort with a plain `>`: -0.0 and 0.0 equal, in std::sort's order (here
// the one JAX gives: tests/jax/dtype_rules/approx_top_k-f32-zeros).
BOOST_AUTO_TEST_CASE(approx_top_k_is_exact_on_cpu) {
  const Eqn e = make(
      "approx_top_k",
      {{"k", 3}, {"reduction_dimension", -1}, {"is_max_k", false}, {"aggregate_to_topk", true}});
  const std::vector<Value> out = run_raw(e, {F({2, 4}, {4, -1, 3, 2, 0.5f, 0.25f, 8, -8})});
  check_bits(out[0], {2, 3}, {-1, 2, 3, -8, 0.25f, 0.5f});
  check_bits(out[1], {2, 3}, {1, 3, 2, 3, 1, 0});
}

// The row of the top_k test through approx_max_k / approx_min_k: the indices JAX 0.10.2 gives on
// CPU for k = 1 (XLA's reduce), 3 (max: XLA's TopK; min: std::sort by `<`, sliced) and 10
// (std::sort over NaNs of both signs, ties and zeros of both signs).
BOOST_AUTO_TEST_CASE(approx_top_k_of_a_row_with_nans_as_xla_rewrites_it) {
  const std::vector<float> x = {1, kNaN, -0.0f, 0.0f, 3, 3, kNegNaN, kInf, -kInf, 0.0f};
  const auto idx = [&](bool max_k, std::int64_t k) {
    const Eqn e = make(
        "approx_top_k",
        {{"k", k}, {"reduction_dimension", -1}, {"is_max_k", max_k}, {"aggregate_to_topk", true}});
    return run_raw(e, {F({10}, x)})[1];
  };
  check_bits(idx(true, 1), {1}, {7});
  check_bits(idx(false, 1), {1}, {8});
  check_bits(idx(true, 3), {3}, {1, 7, 4});
  check_bits(idx(false, 3), {3}, {8, 2, 0});
  check_bits(idx(true, 10), {10}, {7, 4, 0, 1, 5, 2, 3, 6, 9, 8});
  check_bits(idx(false, 10), {10}, {8, 2, 0, 1, 3, 4, 5, 6, 9, 7});
}

BOOST_AUTO_TEST_CASE(rev_reverses_the_named_dimensions) {
  check_bits(run1(make("rev", {{"dimensions", {1}}}), {F({2, 3}, {1, 2, 3, 4, 5, 6})}), {2, 3},
             {3, 2, 1, 6, 5, 4});
  check_bits(run1(make("rev", {{"dimensions", {0, 1}}}), {F({2, 3}, {1, 2, 3, 4, 5, 6})}), {2, 3},
             {6, 5, 4, 3, 2, 1});
  CHECK_ERROR(infer_error(make("rev", {{"dimensions", {2}}}), {F32({2, 3})}), "axis 2");
}

// A sort of 10^9 elements is about 30 levels of 10^9 element steps: refused by the default
// budget before anything runs; one of 10^6 is within it.
BOOST_AUTO_TEST_CASE(the_budget_refuses_a_sort_of_a_billion_elements) {
  const ValueType big{DType::kF32, {1000000000}};
  CostMeter meter(CostBudget{});
  try {
    meter.add(sort_eqn(0, 1), prim("sort"), {big}, {big}, 1);
    BOOST_ERROR("a sort of 10^9 elements within the budget");
  } catch (const InputError& e) {
    CHECK_ERROR(e.what(), "beyond the budget");
    CHECK_ERROR(e.what(), "--max-flops");
  }
  CostMeter ok(CostBudget{});
  const ValueType m{DType::kF32, {1000000}};
  ok.add(sort_eqn(0, 1), prim("sort"), {m}, {m}, 1);
  BOOST_TEST(ok.flops() > 1000000u * 20);
}

BOOST_AUTO_TEST_SUITE_END()
