// The flops CostMeter (lib/interp/cost.hpp) counts an equation: one an element for what moves
// more than it computes, an element's measured time in dot_general flops for the primitives that
// compute more (erf_inv's 13 ns an element is 1400), and dot_general's 2 per multiply-add.
#include "interp/cost.hpp"

#include "unit/interp/primitives/prim_test_util.hpp"

namespace {

using namespace meshrun::interp;
using meshrun::InputError;
using prim_test::json;
using prim_test::make;

// The flops of one equation of `prim` on types `ops` -> `outs` on one device.
std::uint64_t flops_of(const Eqn& eqn, const std::vector<ValueType>& ops,
                       const std::vector<ValueType>& outs) {
  const Primitive* prim = find_primitive(eqn.primitive);
  BOOST_REQUIRE_MESSAGE(prim != nullptr, eqn.primitive);
  CostMeter meter(CostBudget{UINT64_MAX, UINT64_MAX});
  meter.add(eqn, *prim, ops, outs, 1);
  return meter.flops();
}
std::uint64_t unary_flops(const std::string& name, DType dtype = DType::kF32) {
  const ValueType t{dtype, {1000}};
  return flops_of(make(name), {t}, {t});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cost)

BOOST_AUTO_TEST_CASE(a_transcendental_counts_its_time_in_flops_and_arithmetic_one) {
  BOOST_TEST(unary_flops("erf_inv") == 1000u * 1400);
  BOOST_TEST(unary_flops("tanh") == 1000u * 1000);
  BOOST_TEST(unary_flops("exp") == 1000u * 1200);  // XLA:CPU's exp, with its fmas (issue #49)
  BOOST_TEST(unary_flops("neg") == 1000u);
  const ValueType v{DType::kF32, {1000}}, s{DType::kF32, {}};
  // The larger side of a binary primitive is its operands': 1000 + 1 elements, 1000 + 1000.
  BOOST_TEST(flops_of(make("mul"), {v, s}, {v}) == 1001u);
  BOOST_TEST(flops_of(make("atan2"), {v, v}, {v}) == 2000u * 1000);
  // f32 rem is fmod, 272 ns an element at its worst; i32 rem is the integer %.
  BOOST_TEST(flops_of(make("rem"), {v, v}, {v}) == 2000u * 27300);
  const ValueType i{DType::kI32, {1000}};
  BOOST_TEST(flops_of(make("rem"), {i, i}, {i}) == 2000u);
  // integer_pow: 60 a bit of |y| beyond 3, whose loops are one or two products.
  BOOST_TEST(flops_of(make("integer_pow", {{"y", 2}}), {v}, {v}) == 1000u);
  BOOST_TEST(flops_of(make("integer_pow", {{"y", -3}}), {v}, {v}) == 1000u);
  BOOST_TEST(flops_of(make("integer_pow", {{"y", 5}}), {v}, {v}) == 1000u * 180);
  BOOST_TEST(flops_of(make("integer_pow", {{"y", -(1 << 30)}}), {v}, {v}) == 1000u * 60 * 31);
  // dot_general keeps its own count: 2 x M x N x K.
  const ValueType a{DType::kF32, {4, 8}}, b{DType::kF32, {8, 2}}, c{DType::kF32, {4, 2}};
  const json params = json::parse(R"({"contracting": [[1], [0]], "batch": [[], []]})");
  BOOST_TEST(flops_of(make("dot_general", params), {a, b}, {c}) == 2u * 4 * 2 * 8);
}

// Every name the costs table holds is a primitive meshrun has (a misspelt one would count 1).
BOOST_AUTO_TEST_CASE(every_costly_primitive_counts_more_than_one_an_element) {
  for (const char* name :
       {"erf_inv", "erfc", "tanh", "cbrt", "sin", "cos", "log1p", "expm1", "erf", "exp", "log",
        "sqrt", "rsqrt", "exp2", "logistic", "round", "floor", "ceil",
        // issue #49's float math family (ops/float_math.cpp)
        "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "lgamma",
        "digamma"})
    BOOST_TEST(unary_flops(name) > 1000u, name);
  const ValueType v{DType::kF32, {1000}};
  for (const char* name : {"atan2", "pow", "nextafter", "rem"})
    BOOST_TEST(flops_of(make(name), {v, v}, {v}) > 1000u, name);
}

BOOST_AUTO_TEST_CASE(the_weighted_flops_are_what_the_budget_refuses) {
  const ValueType t{DType::kF32, {1000}};
  const Eqn eqn = make("erf_inv");
  CostMeter at(CostBudget{1400000, UINT64_MAX});
  at.add(eqn, *find_primitive("erf_inv"), {t}, {t}, 1);
  CostMeter over(CostBudget{1399999, UINT64_MAX});
  BOOST_CHECK_EXCEPTION(
      over.add(eqn, *find_primitive("erf_inv"), {t}, {t}, 1), InputError, [](const InputError& e) {
        return std::string(e.what()).find(
                   "erf_inv of f32[1000] -> f32[1000] on 1 device brings the "
                   "program to 1400000 flops, beyond the budget of 1399999") != std::string::npos;
      });
}

BOOST_AUTO_TEST_SUITE_END()
