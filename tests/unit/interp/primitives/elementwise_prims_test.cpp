// The interpreter's primitives, one family per file: the elementwise primitives
// (lib/interp/elementwise.cpp, elementwise_more.cpp, unary.cpp): arithmetic, broadcasting, integers
// and bools, comparisons, the math functions against JAX's bits (within 2 ulps where JAX's own
// approximations differ), select, clamp, convert. Expected values are worked out by hand or
// computed by JAX 0.10.2 on CPU (jax.lax on the same float32 inputs, pasted with 9 significant
// digits, so they are JAX's bits).
#include "unit/interp/primitives/prim_test_util.hpp"

BOOST_AUTO_TEST_SUITE(elementwise)

BOOST_AUTO_TEST_CASE(binary_arithmetic_and_broadcasting) {
  // add f32[4,2] f32[1,2] and mul f32[] f32[4,2], as JAX 0.10.2's jaxprs hold them.
  const Value s = run1(make("add"), {F({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), F({1, 2}, {10, 20})});
  check_bits(s, {4, 2}, {11, 22, 13, 24, 15, 26, 17, 28});
  const Value m = run1(make("mul"), {F({}, {0.5f}), F({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
  check_bits(m, {4, 2}, {0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f, 4});
  const Value c = run1(make("sub"), {F({2, 1}, {1, 2}), F({1, 3}, {10, 20, 30})});
  check_bits(c, {2, 3}, {-9, -19, -29, -8, -18, -28});
  check_bits(run1(make("div"), {F({3}, {1, -1, 0}), F({}, {0})}), {3}, {kInf, -kInf, kNaN});
  check_bits(run1(make("div"), {F({2}, {1, 2}), F({2}, {3, 3})}), {2}, {1.0f / 3.0f, 2.0f / 3.0f});
  check_bits(run1(make("rem"), {F({2}, {7.5f, -7.5f}), F({}, {2})}), {2}, {1.5f, -1.5f});
  check_bits(run1(make("pow"), {F({2}, {2, 9}), F({2}, {10, 0.5f})}), {2}, {1024, 3});
  check_bits(run1(make("add_any"), {F({2}, {1, 2}), F({2}, {3, 4})}), {2}, {4, 6});
  check_bits(run1(make("atan2"), {F({1}, {1}), F({1}, {0})}), {1}, {std::atan2(1.0f, 0.0f)});
  check_bits(run1(make("nextafter"), {F({1}, {1}), F({1}, {2})}), {1},
             {std::nextafter(1.0f, 2.0f)});
}

BOOST_AUTO_TEST_CASE(max_min_propagate_nan_and_order_zeros) {
  // jnp.maximum(-0., 0.) is 0.0 either way round, jnp.minimum -0.0; NaN wins (JAX 0.10.2).
  const Value mx =
      run1(make("max"), {F({4}, {-0.0f, 0.0f, kNaN, 1}), F({4}, {0.0f, -0.0f, 1, kNaN})});
  check_bits(mx, {4}, {0.0f, 0.0f, kNaN, kNaN});
  const Value mn = run1(make("min"), {F({4}, {-0.0f, 0.0f, kNaN, 3}), F({4}, {0.0f, -0.0f, 1, 2})});
  check_bits(mn, {4}, {-0.0f, -0.0f, kNaN, 2});
}

BOOST_AUTO_TEST_CASE(integers_and_bools) {
  // lax.div(7, 0) = -1, lax.rem(7, 0) = 7, lax.div(-7, 2) = -3, lax.rem(-7, 2) = -1 (JAX 0.10.2).
  const Value d = run1(make("div"), {I({3}, {7, -7, 7}), I({3}, {0, 2, -2})});
  check_bits(d, {3}, {-1, -3, -3});
  BOOST_CHECK(d.dtype == DType::kI32);
  check_bits(run1(make("rem"), {I({3}, {7, -7, 7}), I({3}, {0, 2, -2})}), {3}, {7, -1, 1});
  check_bits(run1(make("mul"), {I({2}, {4096, -3}), I({}, {4096})}), {2}, {16777216, -12288});
  CHECK_ERROR(infer_error(make("pow"), {T(DType::kI32, {2}), T(DType::kI32, {2})}),
              "pow does not accept dtype int32");
  BOOST_CHECK_THROW(run1(make("mul"), {I({1}, {4097}), I({1}, {4096})}), PrimitiveError);
  BOOST_CHECK_THROW(run1(make("add"), {I({1}, {16777216}), I({1}, {1})}), PrimitiveError);
  check_bits(run1(make("and"), {I({2}, {12, -1}), I({2}, {10, 5})}), {2}, {8, 5});
  check_bits(run1(make("or"), {B({4}, {0, 0, 1, 1}), B({4}, {0, 1, 0, 1})}), {4}, {0, 1, 1, 1});
  check_bits(run1(make("xor"), {B({4}, {0, 0, 1, 1}), B({4}, {0, 1, 0, 1})}), {4}, {0, 1, 1, 0});
  check_bits(run1(make("not"), {B({2}, {0, 1})}), {2}, {1, 0});
  check_bits(run1(make("not"), {I({2}, {0, 5})}), {2}, {-1, -6});
  check_bits(run1(make("max"), {I({2}, {3, -4}), I({2}, {-3, 4})}), {2}, {3, 4});
}

BOOST_AUTO_TEST_CASE(comparisons_give_bool) {
  const std::vector<float> a{1, 2, 3, kNaN}, b{2, 2, 2, kNaN};
  const std::vector<std::pair<const char*, std::vector<float>>> cases = {
      {"eq", {0, 1, 0, 0}}, {"ne", {1, 0, 1, 1}}, {"lt", {1, 0, 0, 0}},
      {"le", {1, 1, 0, 0}}, {"gt", {0, 0, 1, 0}}, {"ge", {0, 1, 1, 0}}};
  for (const auto& [name, want] : cases) {
    const Value v = run1(make(name), {F({4}, a), F({4}, b)});
    BOOST_CHECK(v.dtype == DType::kBool);
    check_bits(v, {4}, want);
  }
  check_bits(run1(make("lt"), {I({2}, {1, 5}), I({}, {3})}), {2}, {1, 0});
}

BOOST_AUTO_TEST_CASE(unary_exact_ops) {
  const Value x = F({5}, {-2.5f, -0.0f, 0.0f, 1.5f, kNaN});
  check_bits(run1(make("neg"), {x}), {5}, {2.5f, 0.0f, -0.0f, -1.5f, kNaN});
  check_bits(run1(make("abs"), {x}), {5}, {2.5f, 0.0f, 0.0f, 1.5f, kNaN});
  check_bits(run1(make("sign"), {x}), {5}, {-1, -0.0f, 0.0f, 1, kNaN});
  check_bits(run1(make("square"), {x}), {5}, {6.25f, 0, 0, 2.25f, kNaN});
  check_bits(run1(make("floor"), {x}), {5}, {-3, -0.0f, 0, 1, kNaN});
  check_bits(run1(make("ceil"), {x}), {5}, {-2, -0.0f, 0, 2, kNaN});
  check_bits(run1(make("is_finite"), {F({3}, {1, kInf, kNaN})}), {3}, {1, 0, 0});
  check_bits(run1(make("sqrt"), {F({3}, {4, 2, -1})}), {3}, {2, std::sqrt(2.0f), kNaN});
  check_bits(run1(make("round"), {F({4}, {0.5f, 1.5f, 2.5f, -2.5f})}), {4}, {1, 2, 3, -3});
  check_bits(run1(make("round", {{"rounding_method", 1}}), {F({4}, {0.5f, 1.5f, 2.5f, -2.5f})}),
             {4}, {0, 2, 2, -2});
  check_bits(run1(make("abs"), {I({2}, {-3, 4})}), {2}, {3, 4});
  check_bits(run1(make("sign"), {I({3}, {-3, 0, 4})}), {3}, {-1, 0, 1});
  for (const char* id : {"stop_gradient", "copy", "copy_p"})
    check_bits(run1(make(id), {x}), {5}, x.t.data);
}

// tanh is XLA:CPU's own rational approximation (scalar_ops.hpp): JAX's bits, special values
// included (JAX 0.10.2, jit on CPU, pasted with 9 significant digits).
BOOST_AUTO_TEST_CASE(tanh_is_xlas) {
  const std::vector<float> x{1.03029621f,  -2.3915875f,  -0.414010435f, 2.49827337f, -0.229767129f,
                             -2.43906498f, 0.858287334f, 2.21789384f,   0.20980023f, 0.7231901f,
                             1.8941619f,   kNaN,         kInf,          -kInf,       -0.0f,
                             1e-40f,       0.0004f,      3.9e-4f,       7.99f,       8.0f,
                             -8.0f,        20.0f,        1e-37f};
  const std::vector<float> jax{
      0.774027169f, -0.983400166f, -0.391872585f, 0.986568332f, -0.225807354f,   -0.984892547f,
      0.69537425f,  0.976585925f,  0.20677523f,   0.6188815f,   0.9557348f,      kNaN,
      1.0f,         -1.0f,         -0.0f,         1e-40f,       0.000399999903f, 0.00039f,
      0.999999762f, 1.0f,          -1.0f,         1.0f,         1e-37f};
  check_bits(run1(make("tanh"), {F({x.size()}, x)}), {x.size()}, jax);
}

BOOST_AUTO_TEST_CASE(math_functions_near_jax) {
  // JAX 0.10.2 (CPU, jit) on the same inputs. XLA:CPU has its own polynomial approximations of
  // exp, tanh, logistic, erf, erfc, log, log1p; meshrun uses the C library's float functions, so
  // a last-bit difference is allowed there (erfc: up to 3 ulps). sqrt is IEEE and must match.
  const std::vector<float> u{1.03029621f,   -2.3915875f,  -0.414010435f, 2.49827337f,
                             -0.229767129f, -2.43906498f, 0.858287334f,  2.21789384f};
  std::vector<float> au;
  for (float v : u) au.push_back(std::fabs(v));
  struct Case {
    const char* name;
    bool abs;
    std::vector<float> jax;
    long tolerance;
  };
  const std::vector<Case> cases = {
      {"exp",
       false,
       {2.80189562f, 0.091484338f, 0.660994053f, 12.1614771f, 0.794718623f, 0.0872423872f,
        2.35911679f, 9.18795872f},
       2},
      {"tanh",
       false,
       {0.774027169f, -0.983400166f, -0.391872585f, 0.986568332f, -0.225807354f, -0.984892547f,
        0.69537425f, 0.976585925f},
       2},
      {"logistic",
       false,
       {0.736973345f, 0.0838164464f, 0.397950888f, 0.924020648f, 0.442809582f, 0.0802418888f,
        0.702302694f, 0.901844919f},
       2},
      {"erf",
       false,
       {0.854899824f, -0.99928087f, -0.441787869f, 0.999589324f, -0.254773378f, -0.999437988f,
        0.775176466f, 0.998290598f},
       2},
      {"erfc",
       false,
       {0.145100147f, 1.99928093f, 1.44178784f, 0.000410729437f, 1.25477338f, 1.99943805f,
        0.224823549f, 0.00170933385f},
       4},
      {"log",
       true,
       {0.0298463404f, 0.871957362f, -0.881864071f, 0.915599823f, -1.47068894f, 0.891614735f,
        -0.15281634f, 0.796558022f},
       2},
      {"log1p",
       true,
       {0.708181739f, 1.2212981f, 0.346429944f, 1.25226951f, 0.206824824f, 1.23519969f,
        0.619655252f, 1.16872704f},
       2},
      {"sqrt",
       true,
       {1.01503503f, 1.54647589f, 0.643436432f, 1.58059275f, 0.479340315f, 1.56175065f,
        0.926437974f, 1.48925948f},
       0},
      {"rsqrt",
       true,
       {0.98518765f, 0.646631479f, 1.55415511f, 0.632674038f, 2.08620048f, 0.640307069f,
        1.07940304f, 0.671474636f},
       1},
  };
  for (const Case& c : cases) {
    const Value y = run1(make(c.name), {F({8}, c.abs ? au : u)});
    int exact = 0;
    for (std::size_t i = 0; i < 8; ++i) {
      const long d = ulps(y.t.data[i], c.jax[i]);
      exact += d == 0;
      BOOST_CHECK_MESSAGE(d <= c.tolerance, c.name << "[" << i << "]: " << d << " ulps from JAX");
    }
    BOOST_TEST_MESSAGE(c.name << ": " << exact << "/8 bit-identical to JAX");
  }
}

BOOST_AUTO_TEST_CASE(integer_pow_by_repeated_squaring) {
  // lax.integer_pow on JAX 0.10.2 CPU: y=3 is x*(x*x), y=4 (x*x)*(x*x), y=-2 1/(x*x).
  const std::vector<float> x{3.21541405f, -0.883222044f, -2.98781753f,
                             1.65314972f, 2.56181908f,   -2.31330228f};
  check_bits(run1(make("integer_pow", {{"y", 3}}), {F({6}, x)}), {6},
             {33.2438049f, -0.688984871f, -26.6724072f, 4.51789951f, 16.8130054f, -12.3793306f});
  check_bits(run1(make("integer_pow", {{"y", 4}}), {F({6}, x)}), {6},
             {106.892586f, 0.608526587f, 79.6922836f, 7.46876383f, 43.0718765f, 28.6371346f});
  check_bits(run1(make("integer_pow", {{"y", -2}}), {F({6}, x)}), {6},
             {0.096722208f, 1.28191793f, 0.112019047f, 0.365911126f, 0.152371272f, 0.186868131f});
  check_bits(run1(make("integer_pow", {{"y", 0}}), {F({2}, {kNaN, 5})}), {2}, {1, 1});
  check_bits(run1(make("integer_pow", {{"y", 5}}), {I({2}, {-3, 2})}), {2}, {-243, 32});
  BOOST_CHECK_THROW(run1(make("integer_pow", {{"y", 25}}), {I({1}, {2})}), PrimitiveError);
  CHECK_ERROR(infer_error(make("integer_pow", {{"y", -1}}), {T(DType::kI32, {2})}),
              "negative exponent");
}

BOOST_AUTO_TEST_CASE(select_clamp_convert_reduce_precision) {
  const Value s =
      run1(make("select_n"), {B({3}, {1, 0, 1}), F({3}, {1, 2, 3}), F({3}, {10, 20, 30})});
  check_bits(s, {3}, {10, 2, 30});
  const Value s3 = run1(make("select_n"), {I({3}, {2, 0, 1}), F({3}, {1, 2, 3}),
                                           F({3}, {10, 20, 30}), F({3}, {100, 200, 300})});
  check_bits(s3, {3}, {100, 2, 30});
  check_bits(run1(make("select_n"), {B({}, {1}), F({2}, {1, 2}), F({2}, {3, 4})}), {2}, {3, 4});
  BOOST_CHECK_THROW(run1(make("select_n"), {I({1}, {5}), F({1}, {1}), F({1}, {2})}),
                    PrimitiveError);
  // A long predicate, checked whole before the selection: one case out of range at the end fails
  // it; a bool mask picks per element.
  std::vector<float> mask(5000), f(5000), t(5000), want(5000);
  for (std::size_t k = 0; k < mask.size(); ++k) {
    mask[k] = static_cast<float>(k * 7 % 3 == 0);
    f[k] = static_cast<float>(k);
    t[k] = -static_cast<float>(k) - 1;
    want[k] = mask[k] != 0 ? t[k] : f[k];
  }
  check_bits(run1(make("select_n"), {B({5000}, mask), F({5000}, f), F({5000}, t)}), {5000}, want);
  // The same with the result in a lent case's buffer, or in the predicate's.
  check_bits(run1(make("select_n"), {B({5000}, mask), F({5000}, f), F({5000}, t)}, {},
                  {false, true, false}),
             {5000}, want);
  check_bits(run1(make("select_n"), {B({5000}, mask), F({5000}, f), F({5000}, t)}, {},
                  {true, false, false}),
             {5000}, want);
  std::vector<float> bad(5000, 1.0f);
  bad.back() = 2;
  BOOST_CHECK_EXCEPTION(
      run1(make("select_n"), {I({5000}, bad), F({5000}, f), F({5000}, t)}), PrimitiveError,
      [](const PrimitiveError& e) {
        return std::string(e.what()).find("predicate 2 is out of range for 2 cases") !=
               std::string::npos;
      });
  CHECK_ERROR(infer_error(make("select_n"), {F32({2}), F32({2}), F32({2})}),
              "bool or int32 predicate");
  CHECK_ERROR(infer_error(make("select_n"), {T(DType::kBool, {2}), F32({2}), F32({3})}),
              "same shapes");
  CHECK_ERROR(infer_error(make("select_n"), {T(DType::kBool, {3}), F32({2}), F32({2})}),
              "predicate shape");

  check_bits(run1(make("clamp"), {F({}, {0}), F({4}, {-1, 0.5f, 2, kNaN}), F({}, {1})}), {4},
             {0, 0.5f, 1, kNaN});
  check_bits(run1(make("clamp"), {F({2}, {0, 5}), F({2}, {-1, 1}), F({2}, {1, 6})}), {2}, {0, 5});
  CHECK_ERROR(infer_error(make("clamp"), {F32({3}), F32({2}), F32({})}), "min.shape");

  // convert_element_type(nan) -> 0 and (-2.7) -> -2 as int32 (JAX 0.10.2); to bool x != 0.
  const Value ci =
      run1(make("convert_element_type", {{"new_dtype", "i32"}}), {F({3}, {kNaN, -2.7f, 3.9f})});
  BOOST_CHECK(ci.dtype == DType::kI32);
  check_bits(ci, {3}, {0, -2, 3});
  check_bits(
      run1(make("convert_element_type", {{"new_dtype", "bool"}}), {F({3}, {0, -0.0f, kNaN})}), {3},
      {0, 0, 1});
  check_bits(run1(make("convert_element_type", {{"new_dtype", "f32"}}), {B({2}, {1, 0})}), {2},
             {1, 0});
  BOOST_CHECK_THROW(run1(make("convert_element_type", {{"new_dtype", "i32"}}), {F({1}, {3e7f})}),
                    PrimitiveError);

  // To bfloat16 (8 exponent bits, 7 mantissa bits): 1 + 2^-8 ties to even (1), 1 + 3*2^-8 up.
  const Eqn rp = make("reduce_precision", {{"exponent_bits", 8}, {"mantissa_bits", 7}});
  check_bits(run1(rp, {F({3}, {1.00390625f, 1.01171875f, kNaN})}), {3}, {1.0f, 1.015625f, kNaN});
  // To float16's range (5 exponent bits): 70000 overflows, 1e-8 flushes to zero.
  const Eqn half = make("reduce_precision", {{"exponent_bits", 5}, {"mantissa_bits", 10}});
  check_bits(run1(half, {F({3}, {70000, -1e-8f, 1})}), {3}, {kInf, -0.0f, 1});
  CHECK_ERROR(infer_error(make("reduce_precision", {{"exponent_bits", 0}, {"mantissa_bits", 7}}),
                          {F32({1})}),
              "exponent_bits");
}

BOOST_AUTO_TEST_CASE(erf_inv_near_jax) {
  // jax.lax.erf_inv on JAX 0.10.2 CPU (XLA's polynomial; its bits: tests/jax/dtype_rules erf_inv).
  const Value y = run1(make("erf_inv"), {F({7}, {0.0f, 0.5f, -0.9f, 1.0f, -1.0f, 0.999f, 2.0f})});
  const std::vector<float> jax{0.0f, 0.476936281f, -1.16308701f, kInf, -kInf, 2.32675767f, kNaN};
  for (std::size_t i = 0; i < jax.size(); ++i) {
    if (std::isnan(jax[i]) || std::isinf(jax[i])) {
      BOOST_CHECK(std::memcmp(&y.t.data[i], &jax[i], 4) == 0 ||
                  (std::isnan(jax[i]) && std::isnan(y.t.data[i])));
    } else {
      BOOST_CHECK_MESSAGE(ulps(y.t.data[i], jax[i]) <= 2,
                          "erf_inv[" << i << "]: " << ulps(y.t.data[i], jax[i]));
    }
  }
}

BOOST_AUTO_TEST_CASE(owned_operand_buffer_is_reused) {
  std::vector<Value> in;
  in.push_back(F({4}, {1, 2, 3, 4}));
  in.push_back(F({}, {1}));
  const float* storage = in[0].t.data.data();
  std::vector<Value*> ptrs{&in[0], &in[1]};
  const bool owned[] = {true, false};
  PrimContext ctx;
  std::vector<Value> out = prim("add").eval(make("add"), ptrs, std::span<const bool>(owned), ctx);
  BOOST_CHECK(out[0].t.data.data() == storage);
  check_bits(out[0], {4}, {2, 3, 4, 5});
  // Not owned: left as it is.
  Value a = F({2}, {1, 2});
  Value* pa[] = {&a};
  const bool not_owned[] = {false};
  std::vector<Value> e = prim("exp").eval(make("exp"), std::span<Value* const>(pa),
                                          std::span<const bool>(not_owned), ctx);
  check_bits(a, {2}, {1, 2});
  BOOST_CHECK(e[0].t.data.data() != a.t.data.data());
  // The same value twice, owned: x * x in place.
  Value x = F({2}, {3, 4});
  Value* px[] = {&x, &x};
  const bool both[] = {true, true};
  std::vector<Value> sq =
      prim("mul").eval(make("mul"), std::span<Value* const>(px), std::span<const bool>(both), ctx);
  check_bits(sq[0], {2}, {9, 16});
}

BOOST_AUTO_TEST_CASE(select_n_lending_its_first_case_keeps_the_shape) {
  // jnp.where(mask, s, -1e9) under grad: the predicate is also an outvar (not lent), so the first
  // case, the broadcast -1e9, lends its buffer; the result must keep the cases' shape (it once
  // read in[1]'s shape after moving from it: f32[] holding 4 elements).
  const Value y = run1(
      make("select_n"),
      {B({2, 2}, {1, 0, 1, 1}), F({2, 2}, {-1e9f, -1e9f, -1e9f, -1e9f}), F({2, 2}, {1, 2, 3, 4})},
      {}, {false, true, true});
  check_bits(y, {2, 2}, {1, -1e9f, 3, 4});
}

BOOST_AUTO_TEST_CASE(elementwise_errors) {
  CHECK_ERROR(infer_error(make("add"), {F32({4, 2}), F32({3, 2})}),
              "add got incompatible shapes for broadcasting: (4, 2), (3, 2)");
  CHECK_ERROR(infer_error(make("mul"), {F32({4}), F32({4, 1})}), "incompatible shapes");
  CHECK_ERROR(infer_error(make("add"), {F32({2}), T(DType::kI32, {2})}),
              "add requires arguments to have the same dtypes, got float32, int32");
  CHECK_ERROR(infer_error(make("add"), {F32({2})}), "add takes 2 operands, got 1");
  CHECK_ERROR(infer_error(make("exp"), {T(DType::kI32, {2})}), "exp does not accept dtype int32");
  CHECK_ERROR(infer_error(make("and"), {F32({2}), F32({2})}), "does not accept dtype float32");
  CHECK_ERROR(infer_error(make("add"), {T(DType::kBool, {2}), T(DType::kBool, {2})}), "dtype bool");
}

BOOST_AUTO_TEST_SUITE_END()
