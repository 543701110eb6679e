// reduce_window and its forms, select_and_scatter_add, select_and_gather_add
// (lib/interp/ops/windows.cpp): windows, strides, padding and dilations worked out by hand, the
// params' checks and the budget. JAX's own results are tests/jax/dtype_rules/{reduce_window,
// select_and}*.
#include "interp/cost.hpp"
#include "unit/interp/primitives/prim_test_util.hpp"

namespace {

json window(std::vector<int> dims, std::vector<int> strides, json padding,
            std::vector<int> base = {}, std::vector<int> dil = {}) {
  json p = {{"window_dimensions", dims}, {"window_strides", strides}, {"padding", padding}};
  if (base.empty()) base.assign(dims.size(), 1);
  if (dil.empty()) dil.assign(dims.size(), 1);
  p["base_dilation"] = base;
  p["window_dilation"] = dil;
  return p;
}

// reduce_window's body: `prim` of its two invars.
json body(const std::string& prim) {
  return json::parse(R"({"invars":[{"id":0,"type":{"dtype":"f32","shape":[]}},
    {"id":1,"type":{"dtype":"f32","shape":[]}}],"constvars":[],"consts":[],
    "eqns":[{"primitive":")" +
                     prim + R"(","params":{},"in":[{"var":0},{"var":1}],
    "out":[{"id":2,"type":{"dtype":"f32","shape":[]}}]}],"outvars":[{"var":2}]})");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(windows)

BOOST_AUTO_TEST_CASE(sum_max_min_with_strides_and_padding) {
  // [1..5], window 2, stride 2, padding (1, 1): windows {pad,1} {2,3} {4,5}.
  const json p = window({2}, {2}, {{1, 1}});
  check_bits(run1(make("reduce_window_sum", p), {F({5}, {1, 2, 3, 4, 5})}), {3}, {1, 5, 9});
  check_bits(run1(make("reduce_window_max", p), {F({5}, {1, 2, 3, 4, 5})}), {3}, {1, 3, 5});
  check_bits(run1(make("reduce_window_min", p), {F({5}, {1, 2, 3, 4, 5})}), {3}, {1, 2, 4});
  // 2-D: a 2x2 max pool of a 2x4.
  check_bits(run1(make("reduce_window_max", window({2, 2}, {2, 2}, {{0, 0}, {0, 0}})),
                  {F({2, 4}, {1, 5, 2, 0, 3, 4, 8, -1})}),
             {1, 2}, {5, 8});
  // A window that is all padding is the init: -inf for max.
  check_bits(run1(make("reduce_window_max", window({1}, {1}, {{1, 0}})), {F({1}, {2})}), {2},
             {-kInf, 2});
}

BOOST_AUTO_TEST_CASE(base_and_window_dilation) {
  // base dilation 2: [1, _, 2, _, 3]; window 2 with dilation 2 reads positions i and i + 2.
  check_bits(
      run1(make("reduce_window_sum", window({2}, {1}, {{0, 0}}, {2}, {2})), {F({3}, {1, 2, 3})}),
      {3}, {3, 0, 5});
}

BOOST_AUTO_TEST_CASE(a_generic_body_folds_from_its_init) {
  json p = window({2}, {1}, {{0, 0}});
  p["jaxpr"] = body("mul");
  check_bits(run1(make("reduce_window", p), {F({3}, {2, 3, 4}), F({}, {0.5f})}), {2}, {3, 6});
  p["jaxpr"] = body("sub");
  CHECK_ERROR(infer_error(make("reduce_window", p), {F32({3}), F32({})}),
              "must be one add, mul, max, min, and or or");
  p["jaxpr"] = body("add");
  CHECK_ERROR(infer_error(make("reduce_window", p), {F32({3}), F32({1})}),
              "the init value (operand 1) must be a scalar");
}

// A window of a whole axis padded n - 1 before is a scan to XLA:CPU (ops/scan.hpp): over 20
// elements [2^24, 1 x 19] it sums by chunks of 16 (see cumulative_prims_test).
BOOST_AUTO_TEST_CASE(a_whole_axis_window_sums_as_xla_scans) {
  std::vector<float> x(20, 1.0f);
  x[0] = 16777216.0f;
  const Value v = run1(make("reduce_window_sum", window({20}, {1}, {{19, 0}})), {F({20}, x)});
  BOOST_TEST(v.t.data[16] == 16777216.0f);
  BOOST_TEST(v.t.data[17] == 16777218.0f);
  BOOST_TEST(v.t.data[19] == 16777220.0f);
}

// jax.grad of a max pool: each source element goes to the first maximum of its window; ties keep
// the first; with 'SAME' padding JAX pads with -inf on CPU.
BOOST_AUTO_TEST_CASE(select_and_scatter_add_routes_to_the_first_maximum) {
  const json p = {{"window_dimensions", {2}},
                  {"window_strides", {1}},
                  {"padding", {{0, 1}}},
                  {"select_prim", "ge"}};
  check_bits(
      run1(make("select_and_scatter_add", p), {F({4}, {10, 20, 30, 40}), F({4}, {1, 3, 3, 2})}),
      {4}, {0, 30, 30, 40});
  CHECK_ERROR(infer_error(make("select_and_scatter_add", p), {F32({3}), F32({4})}),
              "the source is (3,), the operand's windows (4,)");
  json q = p;
  q["select_prim"] = "gt";
  CHECK_ERROR(infer_error(make("select_and_scatter_add", q), {F32({4}), F32({4})}),
              "param 'select_prim': gt");
}

BOOST_AUTO_TEST_CASE(select_and_gather_add_takes_the_tangent_of_the_maximum) {
  json p = window({2}, {1}, {{0, 0}});
  p["select_prim"] = "ge";
  check_bits(
      run1(make("select_and_gather_add", p), {F({4}, {10, 20, 30, 40}), F({4}, {1, 3, 3, 2})}), {3},
      {20, 20, 30});
}

// NaN in a max pool and its derivatives: what JAX 0.10.2 gives on CPU for x = [1, NaN, 3, 2, NaN,
// NaN, -1, 5] (printed by jax.jit of the pool, its vjp and its jvp). ge(a, NaN) is
// false, so a NaN is selected and the next element after it again; padding (-inf) keeps a window
// of -infs, whose gradient is dropped.
BOOST_AUTO_TEST_CASE(nan_and_minus_inf_in_a_max_pool_as_jax) {
  const std::vector<float> x = {1, kNaN, 3, 2, kNaN, kNaN, -1, 5};
  check_bits(run1(make("reduce_window_max", window({2}, {1}, {{0, 0}})), {F({8}, x)}), {7},
             {kNaN, kNaN, 3, kNaN, kNaN, kNaN, 5});
  const json sas = {{"window_dimensions", {2}},
                    {"window_strides", {1}},
                    {"padding", {{0, 0}}},
                    {"select_prim", "ge"}};
  check_bits(
      run1(make("select_and_scatter_add", sas), {F({7}, {10, 20, 30, 40, 50, 60, 70}), F({8}, x)}),
      {8}, {0, 10, 50, 0, 40, 50, 60, 70});
  const json sas3 = {{"window_dimensions", {3}},
                     {"window_strides", {2}},
                     {"padding", {{1, 1}}},
                     {"select_prim", "ge"}};
  check_bits(run1(make("select_and_scatter_add", sas3), {F({4}, {1, 2, 3, 4}), F({8}, x)}), {8},
             {0, 1, 2, 0, 0, 3, 0, 4});
  json sag = window({2}, {1}, {{0, 0}});
  sag["select_prim"] = "ge";
  check_bits(run1(make("select_and_gather_add", sag),
                  {F({8}, {0, 10, 20, 30, 40, 50, 60, 70}), F({8}, x)}),
             {7}, {10, 20, 20, 40, 50, 60, 70});
  const json pad = {{"window_dimensions", {2}},
                    {"window_strides", {2}},
                    {"padding", {{1, 1}}},
                    {"select_prim", "ge"}};
  check_bits(run1(make("select_and_scatter_add", pad),
                  {F({3}, {1, 2, 3}), F({4}, {-kInf, -kInf, 2, -kInf})}),
             {4}, {0, 0, 2, 3});
}

BOOST_AUTO_TEST_CASE(the_params_are_checked) {
  CHECK_ERROR(infer_error(make("reduce_window_sum", window({0}, {1}, {{0, 0}})), {F32({3})}),
              "param 'window_dimensions': 0 is outside 1 to 2^31");
  CHECK_ERROR(infer_error(make("reduce_window_sum", window({1, 1}, {1}, {{0, 0}})), {F32({3})}),
              "param 'window_dimensions': 2 entries for an operand of rank 1");
  CHECK_ERROR(infer_error(make("reduce_window_sum", window({1}, {1}, {{-1, 0}})), {F32({3})}),
              "negative padding is not supported");
  CHECK_ERROR(infer_error(make("reduce_window_sum", window({1}, {1}, {0})), {F32({3})}),
              "each entry a pair of integers");
  CHECK_ERROR(
      infer_error(make("reduce_window_sum", window({1}, {1}, {{0, 0}})), {T(DType::kBool, {3})}),
      "reduce_window_sum does not accept dtype bool");
  // An output of 10^12 elements (base dilation 10^6 of a 10^6 axis) is refused by its size.
  CHECK_ERROR(infer_error(make("reduce_window_max", window({1}, {1}, {{0, 0}}, {1000000})),
                          {F32({1000001})}),
              "above the limit of 2^31 elements");
}

// The budget counts every window element of every output, 500 flops (5 ns) each: 2^20 outputs
// of windows of 2^20 are 2^40 folds, refused; the same output with windows of 2 is within it.
BOOST_AUTO_TEST_CASE(the_budget_counts_window_elements) {
  const std::size_t n = std::size_t{1} << 21;
  const Eqn big = make("reduce_window_sum", window({1 << 20}, {1}, {{0, 0}}));
  const ValueType in{DType::kF32, {n}}, out{DType::kF32, {n - (1 << 20) + 1}};
  CostMeter meter(CostBudget{});
  BOOST_CHECK_THROW(meter.add(big, prim("reduce_window_sum"), {in}, {out}, 1), InputError);
  CostMeter ok(CostBudget{});
  const ValueType out2{DType::kF32, {n - 1}};
  ok.add(make("reduce_window_sum", window({2}, {1}, {{0, 0}})), prim("reduce_window_sum"), {in},
         {out2}, 1);
  BOOST_TEST(ok.flops() == 1000u * (n - 1));
}

BOOST_AUTO_TEST_SUITE_END()
