// The primitives' registry (interp/primitives.hpp): one entry per primitive carries everything
// meshrun knows of it -- its shape rule and eval, its fused kernel, whether it is an identity, a
// collective or an all-reduce, its flops -- and a name registered twice is refused.
#include <array>
#include <string>

#include <boost/test/unit_test.hpp>

#include "interp/primitives.hpp"
#include "support/errors.hpp"

using namespace meshrun;
using namespace meshrun::interp;

BOOST_AUTO_TEST_CASE(a_name_registered_twice_is_refused) {
  const Primitive& add = *find_primitive("add");
  const std::array<PrimitiveEntry, 2> first = {{{"add", add}, {"sub", add}}};
  const std::array<PrimitiveEntry, 1> again = {{{"add", add}}};
  BOOST_CHECK_EQUAL(make_registry({first}).size(), 2u);
  try {
    make_registry({first, again});
    BOOST_FAIL("a duplicate was accepted");
  } catch (const InternalError& e) {
    BOOST_CHECK_EQUAL(std::string(e.what()), "internal error: primitive add is registered twice");
  }
}

BOOST_AUTO_TEST_CASE(each_entry_carries_its_kinds) {
  // The fused elementwise ops, with their operand counts; integer_pow reads its "y".
  for (const char* p : {"add", "add_any", "sub", "mul", "div", "max", "min", "pow"}) {
    BOOST_TEST_CONTEXT(p) {
      BOOST_CHECK(find_primitive(p)->fused != nullptr);
      BOOST_CHECK_EQUAL(int(find_primitive(p)->arity), 2);
    }
  }
  for (const char* p : {"neg", "exp", "tanh", "logistic", "rsqrt", "square", "integer_pow"}) {
    BOOST_TEST_CONTEXT(p) {
      BOOST_CHECK(find_primitive(p)->fused != nullptr);
      BOOST_CHECK_EQUAL(int(find_primitive(p)->arity), 1);
    }
  }
  BOOST_CHECK_EQUAL(std::string(find_primitive("integer_pow")->fused_param), "y");
  for (const char* p : {"rem", "atan2", "eq", "cbrt", "dot_general", "psum", "transpose"})
    BOOST_CHECK_MESSAGE(find_primitive(p)->fused == nullptr, p);
  // Identities, collectives, all-reduces.
  for (const char* p : {"pvary", "pcast", "stop_gradient", "copy", "copy_p"})
    BOOST_CHECK_MESSAGE(find_primitive(p)->identity, p);
  BOOST_CHECK(!find_primitive("neg")->identity);
  for (const char* p : {"psum", "psum_invariant", "pmean"}) {
    BOOST_CHECK_MESSAGE(find_primitive(p)->reduction && find_primitive(p)->collective, p);
  }
  for (const char* p : {"all_gather", "reduce_scatter", "psum_scatter", "ppermute", "all_to_all"}) {
    BOOST_CHECK_MESSAGE(find_primitive(p)->collective && !find_primitive(p)->reduction, p);
  }
  for (const char* p : {"pvary", "axis_index", "add"})
    BOOST_CHECK_MESSAGE(!find_primitive(p)->collective, p);
  // dot_general counts 2 flops per multiply-add: f32[4,8] x f32[8,2] -> 2 * 4 * 2 * 8.
  const Primitive& dot = *find_primitive("dot_general");
  BOOST_REQUIRE(dot.flops != nullptr);
  Eqn eqn;
  eqn.primitive = "dot_general";
  eqn.params = nlohmann::json::parse(R"({"contracting": [[1], [0]], "batch": [[], []]})");
  const std::array<ValueType, 2> ops = {{{DType::kF32, {4, 8}}, {DType::kF32, {8, 2}}}};
  const std::array<ValueType, 1> outs = {{{DType::kF32, {4, 2}}}};
  BOOST_CHECK_EQUAL(dot.flops(eqn, ops, outs), 128u);
  BOOST_CHECK(find_primitive("add")->flops == nullptr);
}
