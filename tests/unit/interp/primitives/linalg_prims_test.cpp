// cholesky, triangular_solve, lu, lu_pivots_to_permutation, custom_linear_solve and stack
// (lib/interp/ops/linalg.cpp): JAX 0.10.2's own results on CPU (the numbers below are what
// jax.lax.linalg printed for these inputs, 9 significant digits: its float32 bits), compared bit
// for bit; the shapes refused before anything runs; the budget. tests/jax/dtype_rules/ (cholesky,
// triangular_solve, lu*, custom_linear_solve, cho_solve, lu_solve, stack) and the batched-solve
// corpus program run the same primitives from exported programs.
#include "interp/cost.hpp"
#include "unit/interp/primitives/prim_test_util.hpp"

namespace {

Eqn tri(bool left, bool lower, bool transpose, bool unit) {
  return make(
      "triangular_solve",
      {{"left_side", left}, {"lower", lower}, {"transpose_a", transpose}, {"unit_diagonal", unit}});
}

// A8[i][j] = (7 i + 3 j) % 11 - 5, plus 0.5 on the diagonal.
std::vector<float> a8() {
  std::vector<float> a;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      a.push_back(static_cast<float>((i * 7 + j * 3) % 11 - 5) + (i == j ? 0.5f : 0));
  return a;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(linalg)

// jax.lax.linalg.lu(A8): OpenBLAS's getf2 (its sdot and sgemv kernels' sums, the 4-column kernel at
// column 4) -- plain dot products give other bits from n = 8.
BOOST_AUTO_TEST_CASE(lu_of_an_8x8_is_jaxs_bits_pivots_and_permutation) {
  const std::vector<Value> out = run_raw(make("lu"), {F({8, 8}, a8())});
  BOOST_REQUIRE_EQUAL(out.size(), 3u);
  check_bits(
      out[0], {8, 8},
      {5.0f,          -3.0f,         0.0f,          3.5f,          -5.0f,         -2.0f,
       1.0f,          4.0f,          0.400000006f,  6.69999981f,   -3.0f,         -1.39999998f,
       5.0f,          -4.19999981f,  -2.4000001f,   -0.600000024f, -0.400000006f, -0.0298507549f,
       4.4104476f,    -2.64179087f,  -2.85074615f,  1.0746268f,    5.32835817f,   -1.41791046f,
       -0.900000036f, -0.701492548f, -0.250423014f, 5.50634527f,   -5.70642996f,  -5.47715759f,
       2.55076146f,   7.82402706f,   0.0f,          0.447761238f,  -0.829103231f, -0.647153735f,
       -7.29530621f,  3.22701073f,   3.14312077f,   3.65641117f,   0.200000003f,  0.686567187f,
       -0.439932346f, -0.345240831f, 0.432752848f,  5.46890831f,   0.312310934f,  0.107006729f,
       0.800000012f,  -0.238805965f, -0.389170915f, -0.392717183f, -0.938081205f, -0.202699929f,
       5.21404314f,   5.62923765f,   -0.600000024f, -0.268656731f, 0.497461945f,  -0.356303275f,
       0.585554361f,  -0.951572657f, 0.128524393f,  -1.03080773f});
  BOOST_CHECK(out[1].dtype == DType::kI32 && out[2].dtype == DType::kI32);
  check_bits(out[1], {8}, {3, 1, 2, 3, 7, 7, 6, 7});
  check_bits(out[2], {8}, {3, 1, 2, 0, 7, 4, 6, 5});
  // A wide 3 x 5 block: pivots of min(m, n), a permutation of m.
  const std::vector<float> a = a8();
  std::vector<float> w;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) w.push_back(a[static_cast<std::size_t>(i * 8 + j)]);
  const std::vector<Value> wide = run_raw(make("lu"), {F({3, 5}, w)});
  check_bits(
      wide[0], {3, 5},
      {-4.5f, -2.0f, 1.0f, 4.0f, -4.0f, -0.444444448f, 4.61111116f, -2.55555558f, 1.77777779f,
       1.22222221f, 0.444444448f, 0.409638524f, 5.10240936f, -6.50602436f, 0.277108431f});
  BOOST_TEST(wide[1].t.shape == Shape({3}));
  BOOST_TEST(wide[2].t.shape == Shape({3}));
}

// LAPACK's zero pivot: no swap, no scaling, the factorization goes on (JAX's lu of this matrix).
// A pivot below FLT_MIN neither: XLA:CPU runs LAPACK with denormals flushed (FTZ, DAZ).
BOOST_AUTO_TEST_CASE(lu_of_singular_and_subnormal_matrices_is_jaxs) {
  const std::vector<Value> s = run_raw(make("lu"), {F({3, 3}, {0, 0, 1, 0, 0, 2, 1, 1, 1})});
  check_bits(s[0], {3, 3}, {1, 1, 1, 0, 0, 2, 0, 0, 1});
  check_bits(s[1], {3}, {2, 1, 2});
  check_bits(s[2], {3}, {2, 1, 0});
  const std::vector<Value> t = run_raw(make("lu"), {F({2, 2}, {1e-40f, 1, 1e-41f, 1})});
  check_bits(t[0], {2, 2}, {9.9999461e-41f, 1.0f, 9.99966584e-42f, 1.0f});
  check_bits(t[1], {2}, {0, 1});
  // 1e-40 / 2 is a subnormal quotient: flushed to 0, as in JAX.
  check_bits(run_raw(make("lu"), {F({2, 2}, {2, 1, 1e-40f, 3})})[0], {2, 2}, {2, 1, 0, 3});
}

// jax._src.lax.linalg.cholesky_p on S9 = M M^T + 9 I (M[i][j] = (i+1)(j+1) % 7): the lower
// triangle potf2's, the upper the input's as potrf leaves it (JAX masks it after).
BOOST_AUTO_TEST_CASE(cholesky_of_a_9x9_is_jaxs_bits_upper_triangle_untouched) {
  const std::vector<float> s9 = {
      105, 87, 85,  83,  81,  72,  0,   96,  87, 87,  120, 100, 89,  78,  102, 0,   87,
      111, 85, 100, 145, 74,  110, 125, 0,   85, 100, 83,  89,  74,  117, 93,  99,  0,
      83,  89, 81,  78,  110, 93,  134, 122, 0,  81,  78,  72,  102, 125, 99,  122, 161,
      0,   72, 102, 0,   0,   0,   0,   0,   0,  9,   0,   0,   96,  87,  85,  83,  81,
      72,  0,  105, 87,  87,  111, 100, 89,  78, 102, 0,   87,  120};
  check_bits(run1(make("cholesky"), {F({9, 9}, s9)}), {9, 9},
             {10.2469511f,  87.0f,        85.0f,        83.0f,       81.0f,         72.0f,
              0.0f,         96.0f,        87.0f,        8.4903307f,  6.92201424f,   100.0f,
              89.0f,        78.0f,        102.0f,       0.0f,        87.0f,         111.0f,
              8.29515076f,  4.27208424f,  7.61181784f,  74.0f,       110.0f,        125.0f,
              0.0f,         85.0f,        100.0f,       8.09997082f, 2.92235303f,   -0.745552599f,
              6.50342035f,  93.0f,        99.0f,        0.0f,        83.0f,         89.0f,
              7.9047904f,   1.57262206f,  4.95416403f,  4.31607676f, 5.08614588f,   122.0f,
              0.0f,         81.0f,        78.0f,        7.02648067f, 6.11712933f,   5.33136606f,
              4.33373833f,  2.30429912f,  4.65776205f,  0.0f,        72.0f,         102.0f,
              0.0f,         0.0f,         0.0f,         0.0f,        0.0f,          0.0f,
              3.0f,         0.0f,         0.0f,         9.3686409f,  1.07730758f,   0.352526128f,
              0.650247991f, 0.136776149f, -1.16605973f, 0.0f,        3.76064873f,   87.0f,
              8.4903307f,   5.6218152f,   0.729728103f, 0.66790843f, -0.875558138f, 0.684028685f,
              0.0f,         0.432514101f, 3.72951865f});
}

// Not positive definite: every element NaN (JAX's lowering, from potrf's info). A NaN is no
// failed pivot (potf2 tests ajj <= 0): it spreads as JAX's does.
BOOST_AUTO_TEST_CASE(cholesky_of_not_pd_and_nan_inputs_is_jaxs) {
  check_bits(run1(make("cholesky"), {F({2, 2}, {1, 2, 2, 1})}), {2, 2}, {kNaN, kNaN, kNaN, kNaN});
  check_bits(run1(make("cholesky"), {F({2, 2}, {4, kNaN, kNaN, 9})}), {2, 2},
             {2, kNaN, kNaN, kNaN});
  check_bits(run1(make("cholesky"), {F({2, 2}, {kNaN, 1, 1, 9})}), {2, 2}, {kNaN, 1, kNaN, kNaN});
  // Each matrix of a batch on its own: the first fails, the second not.
  check_bits(run1(make("cholesky"), {F({2, 1, 1}, {-1, 4})}), {2, 1, 1}, {kNaN, 2});
}

// lax.linalg.triangular_solve(T6, B, left_side=False, lower=False, transpose_a=True): x T6^T = B
// for the upper triangle of T6 (T6[i][j] = (5 i + 2 j) % 9 - 4, plus 6 on the diagonal); the
// right side's blocks of 4 rows (strsm's RN/RT kernels) at m = 6.
BOOST_AUTO_TEST_CASE(triangular_solve_on_the_right_is_jaxs_bits) {
  const std::vector<float> t6 = {2, -2, 0,  2, 4, -3, 1,  9, -4, -2, 0, 2,  -3, -1, 7,  3, -4, -2,
                                 2, 4,  -3, 5, 1, 3,  -2, 0, 2,  4,  3, -1, 3,  -4, -2, 0, 2,  10};
  const std::vector<float> b = {-2, -1, 0, 1, 2, -2, 1, 2, -2, -1, 0, 1};
  check_bits(
      run1(tri(false, false, true, false), {F({6, 6}, t6), F({2, 6}, b)}), {2, 6},
      {-2.63333344f, 0.0666666701f, 0.200000003f, 0.200000003f, 0.600000024f, -0.200000003f,
       0.935714304f, 0.0857142881f, -0.123809516f, -0.266666681f, 0.0333333351f, 0.100000001f});
}

BOOST_AUTO_TEST_CASE(lu_pivots_to_permutation_out_of_range_as_jax) {
  // JAX 0.10.2: lu_pivots_to_permutation([2, -1, 7, 0, -9, 3], 7) (jnp's loop: negatives wrapped,
  // reads clamped, writes dropped).
  const Eqn e = make("lu_pivots_to_permutation", {{"permutation_size", 7}});
  check_bits(run1(e, {I({6}, {2, -1, 7, 0, -9, 3})}), {7}, {3, 6, 1, 5, 3, 2, 1});
  check_bits(run1(make("lu_pivots_to_permutation", {{"permutation_size", 4}}),
                  {I({2, 3}, {2, 2, 3, 0, 1, 2})}),
             {2, 4}, {2, 0, 3, 1, 0, 1, 2, 3});
}

BOOST_AUTO_TEST_CASE(stack_inserts_the_new_axis) {
  const Eqn e = make("stack", {{"axis", 1}});
  check_bits(run1(e, {F({2, 2}, {1, 2, 3, 4}), F({2, 2}, {5, 6, 7, 8})}), {2, 2, 2},
             {1, 2, 5, 6, 3, 4, 7, 8});
  const Value v = run1(make("stack", {{"axis", 1}}), {I({2}, {1, 2}), I({2}, {3, 4})});
  BOOST_CHECK(v.dtype == DType::kI32);
  check_bits(v, {2, 2}, {1, 3, 2, 4});
}

// Arrays of no element: the types and values JAX 0.10.2 gives (lu of f32[3,0]: pivots i32[0],
// permutation [0, 1, 2]), nothing read.
BOOST_AUTO_TEST_CASE(empty_matrices_and_batches) {
  const std::vector<Value> a = run_raw(make("lu"), {F({3, 0}, {})});
  BOOST_TEST(a[1].t.shape == Shape({0}));
  check_bits(a[2], {3}, {0, 1, 2});
  BOOST_TEST(run_raw(make("lu"), {F({0, 3}, {})})[2].t.shape == Shape({0}));
  BOOST_TEST(run1(make("cholesky"), {F({2, 0, 0}, {})}).t.shape == Shape({2, 0, 0}));
  BOOST_TEST(run1(make("cholesky"), {F({0, 2, 2}, {})}).t.shape == Shape({0, 2, 2}));
  BOOST_TEST(run1(tri(true, true, false, false), {F({0, 0}, {}), F({0, 3}, {})}).t.shape ==
             Shape({0, 3}));
  check_bits(run1(tri(false, false, false, false), {F({2, 2}, {2, 1, 0, 4}), F({0, 2}, {})}),
             {0, 2}, {});
  check_bits(run1(make("lu_pivots_to_permutation", {{"permutation_size", 2}}), {I({0}, {})}), {2},
             {0, 1});
  BOOST_TEST(run1(make("stack", {{"axis", 0}}), {F({0}, {}), F({0}, {})}).t.shape == Shape({2, 0}));
}

// lax.platform_dependent's index: CPU's list, else the default (null), else refused.
BOOST_AUTO_TEST_CASE(platform_index_picks_cpus_branch) {
  const auto idx = [](json platforms) {
    return run1(make("platform_index", {{"platforms", platforms}}), {}).t.data[0];
  };
  BOOST_TEST(idx(json::array({json::array({"mosaic"}), nullptr})) == 1.0f);
  BOOST_TEST(idx(json::array({nullptr, json::array({"cuda", "cpu"})})) == 1.0f);
  BOOST_TEST(idx(json::array({json::array({"tpu"}), json::array({"cpu"}), nullptr})) == 1.0f);
  CHECK_ERROR(
      infer_error(make("platform_index", {{"platforms", json::array({json::array({"tpu"})})}}), {}),
      "no branch for cpu and no default");
  CHECK_ERROR(infer_error(make("platform_index"), {}), "'platforms' missing");
}

// A bad shape is one message from infer, before anything runs.
BOOST_AUTO_TEST_CASE(bad_shapes_and_dtypes_are_refused_before_running) {
  CHECK_ERROR(infer_error(make("cholesky"), {F32({3, 4})}),
              "cholesky: the operand must be square in its last two dimensions, got shape (3, 4)");
  CHECK_ERROR(infer_error(make("cholesky"), {F32({3})}), "must have rank >= 2");
  CHECK_ERROR(infer_error(make("cholesky"), {T(DType::kI32, {2, 2})}),
              "cholesky does not accept dtype int32");
  CHECK_ERROR(infer_error(tri(true, true, false, false), {F32({3, 3}), F32({4, 2})}),
              "triangular_solve: b of shape (4, 2) does not fit a of shape (3, 3)");
  CHECK_ERROR(infer_error(tri(false, true, false, false), {F32({3, 3}), F32({3, 2})}),
              "b's columns = a's size");
  CHECK_ERROR(infer_error(tri(true, true, false, false), {F32({2, 3, 3}), F32({3, 3, 2})}),
              "same batch dimensions");
  BOOST_TEST(infer_error(tri(true, true, false, false), {F32({2, 3, 3}), F32({2, 3, 5})}) == "");
  CHECK_ERROR(infer_error(make("lu"), {F32({5})}), "lu: the operand must have rank >= 2");
  CHECK_ERROR(infer_error(make("stack", {{"axis", 0}}), {F32({2}), F32({3})}),
              "stack: operands of one shape and dtype");
  CHECK_ERROR(infer_error(make("stack", {{"axis", 2}}), {F32({2}), F32({2})}), "'axis'");
  CHECK_ERROR(infer_error(make("lu_pivots_to_permutation", {{"permutation_size", 2}}),
                          {T(DType::kI32, {3})}),
              "permutation_size 2 below the pivots' trailing dimension 3");
  CHECK_ERROR(infer_error(make("lu_pivots_to_permutation", {{"permutation_size", 4}}), {F32({3})}),
              "does not accept dtype float32");
  // custom_linear_solve is a holder: the evaluator runs its `jaxpr` (the solve's).
  BOOST_TEST(std::string(prim("custom_linear_solve").holds_jaxpr) == "jaxpr");
}

// The budget knows them: a cholesky of 10^5 x 10^5 (3e14 multiply-adds) and an lu of 64 matrices
// of 4096 x 4096 are refused before anything runs; small ones are within it.
BOOST_AUTO_TEST_CASE(the_budget_refuses_huge_factorizations) {
  const ValueType big{DType::kF32, {100000, 100000}};
  for (const auto& [name, ops] : std::vector<std::pair<std::string, std::vector<ValueType>>>{
           {"cholesky", {big}}, {"lu", {{DType::kF32, {64, 4096, 4096}}}}}) {
    CostMeter meter(CostBudget{});
    try {
      meter.add(make(name), prim(name), ops, ops, 1);
      BOOST_ERROR(name << " of " << type_str(ops[0]) << " within the budget");
    } catch (const InputError& e) {
      CHECK_ERROR(e.what(), "beyond the budget");
    }
  }
  CostMeter tri_meter(CostBudget{});
  const ValueType a{DType::kF32, {100000, 100000}}, b{DType::kF32, {100000, 1000}};
  BOOST_CHECK_THROW(
      tri_meter.add(tri(true, true, false, false), prim("triangular_solve"), {a, b}, {b}, 1),
      InputError);
  CostMeter ok(CostBudget{});
  const ValueType m{DType::kF32, {64, 64}};
  ok.add(make("cholesky"), prim("cholesky"), {m}, {m}, 1);
  BOOST_TEST(ok.flops() >= 64u * 64u * 64u);
}

BOOST_AUTO_TEST_SUITE_END()
