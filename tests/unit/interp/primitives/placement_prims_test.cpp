// The placement primitives (lib/interp/ops/placement.cpp): reshard, device_put,
// sharding_constraint, mesh_cast, sharding_cast, optimization_barrier -- each result its operand's
// value, bit for bit, whatever layout the params ask for; one result per operand.
#include "unit/interp/primitives/prim_test_util.hpp"

BOOST_AUTO_TEST_SUITE(placement)

BOOST_AUTO_TEST_CASE(each_result_is_its_operand) {
  for (const char* name : {"reshard", "device_put", "sharding_constraint", "mesh_cast",
                           "sharding_cast", "optimization_barrier"}) {
    BOOST_TEST_CONTEXT(name) {
      const Value x = F({2, 2}, {1.5f, -0.0f, kNaN, 3e38f});
      check_bits(run1(make(name, {{"to", "P('data', None)"}}), {x}), {2, 2},
                 {1.5f, -0.0f, kNaN, 3e38f});
      // Several operands (device_put of a tuple): one result each, of its own dtype.
      const std::vector<Value> out =
          run_raw(make(name), {F({3}, {1, 2, 3}), I({}, {7}), B({1}, {1})});
      BOOST_REQUIRE_EQUAL(out.size(), 3u);
      check_bits(out[0], {3}, {1, 2, 3});
      BOOST_CHECK(out[1].dtype == DType::kI32);
      BOOST_CHECK(out[2].dtype == DType::kBool);
      BOOST_TEST(prim(name).identity);
    }
  }
  CHECK_ERROR(infer_error(make("reshard"), {}), "at least 1");
}

BOOST_AUTO_TEST_SUITE_END()
