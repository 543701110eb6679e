// The interpreter's primitives, one family per file: the registry (lib/interp/primitives.hpp):
// every primitive but control flow is there, one entry per primitive carries everything meshrun
// knows of it (shape rule and eval, fused kernel, identity, collective or all-reduce, flops), and a
// name registered twice is refused. Expected values are worked out by hand or computed by JAX
// 0.10.2 on CPU (jax.lax on the same float32 inputs, pasted with 9 significant digits, so they are
// JAX's bits).
#include "unit/interp/primitives/prim_test_util.hpp"
#include "support/json.hpp"

BOOST_AUTO_TEST_SUITE(registry)

BOOST_AUTO_TEST_CASE(every_table_primitive_but_control_flow) {
  const std::vector<std::string> names = primitive_names();
  BOOST_CHECK(std::is_sorted(names.begin(), names.end()));
  for (const char* n : {"add",
                        "sub",
                        "mul",
                        "div",
                        "rem",
                        "pow",
                        "max",
                        "min",
                        "atan2",
                        "nextafter",
                        "and",
                        "or",
                        "xor",
                        "add_any",
                        "neg",
                        "abs",
                        "sign",
                        "exp",
                        "exp2",
                        "log",
                        "log1p",
                        "expm1",
                        "tanh",
                        "logistic",
                        "erf",
                        "erfc",
                        "erf_inv",
                        "sqrt",
                        "rsqrt",
                        "cbrt",
                        "square",
                        "sin",
                        "cos",
                        "floor",
                        "ceil",
                        "round",
                        "is_finite",
                        "not",
                        "stop_gradient",
                        "copy",
                        "copy_p",
                        "reduce_precision",
                        "integer_pow",
                        "eq",
                        "ne",
                        "lt",
                        "le",
                        "gt",
                        "ge",
                        "select_n",
                        "clamp",
                        "convert_element_type",
                        "broadcast_in_dim",
                        "reshape",
                        "squeeze",
                        "expand_dims",
                        "transpose",
                        "reduce_sum",
                        "reduce_max",
                        "reduce_min",
                        "reduce_prod",
                        "reduce_and",
                        "reduce_or",
                        "argmax",
                        "argmin",
                        "iota",
                        "concatenate",
                        "split",
                        "slice",
                        "dynamic_slice",
                        "dynamic_update_slice",
                        "pad",
                        "dot_general",
                        "dim_as_value",
                        "psum",
                        "psum_invariant",
                        "pmean",
                        "pvary",
                        "pcast",
                        "all_gather",
                        "reduce_scatter",
                        "psum_scatter",
                        "ppermute",
                        "all_to_all",
                        "axis_index",
                        "gather",
                        "scatter",
                        "scatter-add",
                        "scatter-sub",
                        "scatter-mul",
                        "scatter-min",
                        "scatter-max"}) {
    BOOST_CHECK_MESSAGE(find_primitive(n) != nullptr, "missing " << n);
  }
  for (const char* n : {"no_such_primitive", "scatter_apply", ""})
    BOOST_CHECK_MESSAGE(find_primitive(n) == nullptr, n << " should not be a primitive");
}

// The primitives that hold a jaxpr are entries too, as in JAX: each names its param, has no
// infer or eval of its own (the evaluator runs the jaxpr), and only they are so.
BOOST_AUTO_TEST_CASE(the_holders_of_a_jaxpr_are_entries_naming_their_param) {
  const std::map<std::string, std::string> holders = {{"jit", "jaxpr"},
                                                      {"pjit", "jaxpr"},
                                                      {"custom_jvp_call", "call_jaxpr"},
                                                      {"custom_vjp_call", "call_jaxpr"},
                                                      {"checkpoint", "jaxpr"},
                                                      {"remat2", "jaxpr"},
                                                      {"closed_call", "call_jaxpr"},
                                                      {"call", "call_jaxpr"},
                                                      {"core_call", "call_jaxpr"},
                                                      {"scan", "jaxpr"},
                                                      {"while", "cond_jaxpr"},
                                                      {"cond", "branches"},
                                                      {"shard_map", "jaxpr"},
                                                      // linear algebra (ops/linalg.cpp)
                                                      {"custom_linear_solve", "jaxpr"}};
  // Control flow: run as loops and branches, not inlined as calls; while's second jaxpr, cond's
  // list of them.
  const std::map<std::string, Primitive::Control> control = {{"scan", Primitive::Control::kScan},
                                                             {"while", Primitive::Control::kWhile},
                                                             {"cond", Primitive::Control::kCond}};
  for (const std::string& name : primitive_names()) {
    const Primitive& p = prim(name);
    const auto it = holders.find(name);
    if (it == holders.end()) {
      BOOST_CHECK_MESSAGE(p.holds_jaxpr == nullptr && !p.shard_map, name);
      BOOST_CHECK_MESSAGE(p.infer != nullptr && p.eval != nullptr, name);
      continue;
    }
    BOOST_REQUIRE_MESSAGE(p.holds_jaxpr != nullptr, name);
    BOOST_CHECK_EQUAL(std::string(p.holds_jaxpr), it->second);
    BOOST_CHECK_EQUAL(std::string(nested_jaxpr_param(name)), it->second);
    BOOST_CHECK(p.infer == nullptr && p.eval == nullptr);
    BOOST_CHECK_EQUAL(p.shard_map, name == "shard_map");
    const auto c = control.find(name);
    BOOST_CHECK(p.control == (c == control.end() ? Primitive::Control::kNone : c->second));
    BOOST_CHECK_EQUAL(is_call(name), name != "shard_map" && c == control.end());
    BOOST_CHECK_EQUAL(p.holds_jaxpr2 != nullptr, name == "while");
    BOOST_CHECK_EQUAL(p.jaxpr_list, name == "cond");
  }
  BOOST_CHECK(holds_jaxpr_param("while", "body_jaxpr") && holds_jaxpr_param("while", "cond_jaxpr"));
  BOOST_CHECK(!holds_jaxpr_param("while", "jaxpr") && !holds_jaxpr_param("add", "jaxpr"));
  BOOST_CHECK(nested_jaxpr_param("add") == nullptr && !is_call("add"));
  BOOST_CHECK(nested_jaxpr_param("nope") == nullptr && !is_call("nope"));
}

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
  eqn.params = meshrun::testing::parse_json(R"({"contracting": [[1], [0]], "batch": [[], []]})");
  const std::array<ValueType, 2> ops = {{{DType::kF32, {4, 8}}, {DType::kF32, {8, 2}}}};
  const std::array<ValueType, 1> outs = {{{DType::kF32, {4, 2}}}};
  BOOST_CHECK_EQUAL(dot.flops(eqn, ops, outs), 128u);
  BOOST_CHECK(find_primitive("add")->flops == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()
