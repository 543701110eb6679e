// The interpreter's primitives, one family per file: DimExpr (lib/interp/dims.hpp), JAX's symbolic
// dimension syntax, and the IR's dtypes, types and places (ir.hpp). Expected values are worked out
// by hand or computed by JAX 0.10.2 on CPU (jax.lax on the same float32 inputs, pasted with 9
// significant digits, so they are JAX's bits).
#include "unit/interp/primitives/prim_test_util.hpp"

BOOST_AUTO_TEST_SUITE(dims)

BOOST_AUTO_TEST_CASE(parses_and_evaluates_jax_syntax) {
  const DimBindings b{{"N", 64}, {"D", 10}};
  BOOST_CHECK_EQUAL(DimExpr::parse("N", "f").eval(b, "f"), 64);
  BOOST_CHECK_EQUAL(DimExpr::parse("8*N + 2", "f").eval(b, "f"), 514);
  BOOST_CHECK_EQUAL(DimExpr::parse("floordiv(N, 8)", "f").eval(b, "f"), 8);
  BOOST_CHECK_EQUAL(DimExpr::parse("mod(D - 13, 4)", "f").eval(b, "f"), 1);  // Python: -3 % 4
  BOOST_CHECK_EQUAL(DimExpr::parse("floordiv(D - 13, 2) + 5", "f").eval(b, "f"), 3);  // -2 + 5
  BOOST_CHECK_EQUAL(DimExpr::parse("max(N, D) - min(N, D)", "f").eval(b, "f"), 54);
  BOOST_CHECK_EQUAL(DimExpr::parse("-(D - N)", "f").eval(b, "f"), 54);
  BOOST_CHECK_EQUAL(DimExpr::parse("N - (D + 4)", "f").eval(b, "f"), 50);
  const DimExpr c = DimExpr::parse("2*3", "f");
  BOOST_CHECK(c.is_constant());
  BOOST_CHECK_EQUAL(c.constant(), 6);
}

BOOST_AUTO_TEST_CASE(solvable_names_and_str) {
  std::string name;
  std::int64_t factor = 0;
  BOOST_CHECK(DimExpr::parse("8*M", "f").solvable(&name, &factor));
  BOOST_CHECK_EQUAL(name, "M");
  BOOST_CHECK_EQUAL(factor, 8);
  BOOST_CHECK(DimExpr::parse("M*4", "f").solvable(&name, &factor));
  BOOST_CHECK_EQUAL(factor, 4);
  BOOST_CHECK(DimExpr::parse("N", "f").solvable(&name, &factor));
  BOOST_CHECK_EQUAL(factor, 1);
  BOOST_CHECK(!DimExpr::parse("N + 1", "f").solvable(&name, &factor));
  BOOST_CHECK(!DimExpr::parse("-2*N", "f").solvable(&name, &factor));
  BOOST_CHECK(!DimExpr(5).solvable(&name, &factor));
  std::vector<std::string> names;
  DimExpr::parse("floordiv(N, D) * N + K", "f").names(names);
  BOOST_CHECK((names == std::vector<std::string>{"N", "D", "K"}));
  BOOST_CHECK_EQUAL(DimExpr::parse("floordiv(N,8)", "f").str(), "floordiv(N, 8)");
  BOOST_CHECK_EQUAL(DimExpr::parse("(N+1)*2", "f").str(), "(N + 1)*2");
  BOOST_CHECK_EQUAL(DimExpr::parse("N-(D-1)", "f").str(), "N - (D - 1)");
  BOOST_CHECK_EQUAL(DimExpr(7).str(), "7");
}

BOOST_AUTO_TEST_CASE(refuses_malformed_and_out_of_range) {
  const DimBindings b{{"N", 4}};
  for (const char* bad : {"", "N +", "(N", "N)", "foo(N, 1)", "max(N)", "N $ 2", "2N",
                          "99999999999999999999", "N % 2"}) {
    BOOST_CHECK_THROW(DimExpr::parse(bad, "f"), InputError);
  }
  BOOST_CHECK_THROW(DimExpr::parse(std::string(257, 'N'), "f"), InputError);
  BOOST_CHECK_THROW(DimExpr::parse(std::string(100, '(') + "N" + std::string(100, ')'), "f"),
                    InputError);
  BOOST_CHECK_THROW(DimExpr::parse("M", "f").eval(b, "f"), InputError);
  BOOST_CHECK_THROW(DimExpr::parse("floordiv(N, N - 4)", "f").eval(b, "f"), InputError);
  BOOST_CHECK_THROW(DimExpr::parse("N - 5", "f").eval(b, "f"), InputError);
  BOOST_CHECK_THROW(DimExpr::parse("N*1099511627776*1099511627776", "f").eval(b, "f"), InputError);
  try {
    DimExpr::parse("M", "exports[0].dims").eval(b, "exports[0].dims");
  } catch (const InputError& e) {
    BOOST_CHECK_EQUAL(e.field(), "exports[0].dims");
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(ir)

BOOST_AUTO_TEST_CASE(dtypes_types_and_places) {
  DType t;
  BOOST_CHECK(parse_dtype("i32", &t) && t == DType::kI32);
  BOOST_CHECK(parse_dtype("bool", &t) && t == DType::kBool);
  BOOST_CHECK(!parse_dtype("f64", &t));
  BOOST_CHECK_EQUAL(dtype_name(DType::kF32), std::string("f32"));
  BOOST_CHECK_EQUAL(type_str(F32({4, 2})), "f32[4,2]");
  BOOST_CHECK_EQUAL(type_str(T(DType::kI32, {})), "i32[]");
  Eqn e = make("dot_general");
  BOOST_CHECK_EQUAL(e.place(), "exports[0].jaxpr.eqns[0] (dot_general)");
  e.source = "prog.py:14 (loss_fn)";
  BOOST_CHECK_EQUAL(e.place(), "exports[0].jaxpr.eqns[0] (dot_general at prog.py:14 (loss_fn))");
  BOOST_CHECK(e.sub("jaxpr") == nullptr);
  auto j = std::make_shared<Jaxpr>();
  e.subs.emplace_back("jaxpr", j);
  BOOST_CHECK(e.sub("jaxpr") == j.get());
}

BOOST_AUTO_TEST_SUITE_END()
