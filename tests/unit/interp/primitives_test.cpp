// The interpreter's primitives (lib/interp): each one's inferred types and computed values against
// values worked out by hand or computed by JAX 0.10.2 on CPU (jax.lax on the same float32 inputs,
// pasted with 9 significant digits, so they are JAX's bits), the collectives on a 2x2 mesh, and
// the errors a malformed equation gets. Also DimExpr and the param_* helpers on hostile params.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <array>
#include <memory>
#include <random>
#include <stdexcept>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interp/dims.hpp"
#include "interp/ir.hpp"
#include "interp/primitives.hpp"
#include "interp/value.hpp"
#include "mesh/mesh.hpp"
#include "support/errors.hpp"

using namespace meshrun;
using namespace meshrun::interp;
using json = nlohmann::json;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

Eqn make(const std::string& prim, json params = json::object()) {
  Eqn e;
  e.primitive = prim;
  e.params = std::move(params);
  e.where = "exports[0].jaxpr.eqns[0]";
  return e;
}

Value F(Shape s, std::vector<float> d) {
  return Value(DType::kF32, Tensor(std::move(s), std::move(d)));
}
Value I(Shape s, std::vector<float> d) {
  return Value(DType::kI32, Tensor(std::move(s), std::move(d)));
}
Value B(Shape s, std::vector<float> d) {
  return Value(DType::kBool, Tensor(std::move(s), std::move(d)));
}
ValueType T(DType d, Shape s) { return {d, std::move(s)}; }
ValueType F32(Shape s) { return {DType::kF32, std::move(s)}; }

const Primitive& prim(const std::string& name) {
  const Primitive* p = find_primitive(name);
  BOOST_REQUIRE_MESSAGE(p != nullptr, "no primitive " << name);
  return *p;
}

// Infers, then evaluates; throws std::runtime_error when a value has not its inferred type. No
// Boost.Test assertion: it also runs on the mesh's device threads, and Boost.Test is not
// thread-safe (a failure there reaches the test as the DeviceError Mesh::run throws).
std::vector<Value> run_raw(const Eqn& e, std::vector<Value> in, PrimContext ctx = {},
                           std::vector<bool> owned = {}) {
  const Primitive* p = find_primitive(e.primitive);
  if (p == nullptr) throw std::runtime_error("no primitive " + e.primitive);
  std::vector<ValueType> types;
  for (const Value& v : in) types.push_back(v.type());
  const std::vector<ValueType> want = p->infer(e, types, ctx);
  std::vector<Value*> ptrs;
  for (Value& v : in) ptrs.push_back(&v);
  std::unique_ptr<bool[]> own(new bool[in.size() + 1]);
  for (std::size_t i = 0; i < in.size(); ++i) own[i] = i < owned.size() && owned[i];
  std::vector<Value> out = p->eval(e, ptrs, std::span<const bool>(own.get(), in.size()), ctx);
  if (out.size() != want.size())
    throw std::runtime_error(e.primitive + ": wrong number of results");
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!(out[i].type() == want[i])) {
      throw std::runtime_error(e.primitive + ": got " + type_str(out[i].type()) + ", inferred " +
                               type_str(want[i]));
    }
  }
  return out;
}

Value run1(const Eqn& e, std::vector<Value> in, PrimContext ctx = {},
           std::vector<bool> owned = {}) {
  std::vector<Value> out = run_raw(e, std::move(in), ctx, std::move(owned));
  if (out.size() != 1) throw std::runtime_error(e.primitive + ": not one result");
  return std::move(out[0]);
}

// The message infer throws, or "" when it accepts.
std::string infer_error(const Eqn& e, std::vector<ValueType> in, PrimContext ctx = {}) {
  try {
    prim(e.primitive).infer(e, in, ctx);
  } catch (const PrimitiveError& err) {
    return err.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

#define CHECK_ERROR(expr, part)                                                                   \
  do {                                                                                            \
    const std::string msg_ = (expr);                                                              \
    BOOST_CHECK_MESSAGE(contains(msg_, part), "expected '" << part << "', got '" << msg_ << "'"); \
  } while (0)

// Bit-for-bit (NaN by NaN-ness).
void check_bits(const Value& v, const Shape& shape, const std::vector<float>& want) {
  BOOST_REQUIRE(v.t.shape == shape);
  BOOST_REQUIRE_EQUAL(v.t.data.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const float g = v.t.data[i];
    const bool same = (std::isnan(g) && std::isnan(want[i])) || std::memcmp(&g, &want[i], 4) == 0;
    BOOST_CHECK_MESSAGE(same, "element " << i << ": got " << g << ", want " << want[i]);
  }
}

// Distance in units in the last place.
long ulps(float a, float b) {
  std::int32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  if (x < 0) x = std::numeric_limits<std::int32_t>::min() - x;
  if (y < 0) y = std::numeric_limits<std::int32_t>::min() - y;
  return std::labs(static_cast<long>(x) - static_cast<long>(y));
}

}  // namespace

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

BOOST_AUTO_TEST_SUITE(params)

BOOST_AUTO_TEST_CASE(hostile_params_are_primitive_errors) {
  const std::vector<ValueType> x{F32({4, 2})};
  CHECK_ERROR(infer_error(make("reduce_sum"), x), "param 'axes' missing");
  CHECK_ERROR(infer_error(make("reduce_sum", json(3)), x), "params must be an object");
  CHECK_ERROR(infer_error(make("reduce_sum", {{"axes", "0"}}), x), "must be a list");
  CHECK_ERROR(infer_error(make("reduce_sum", {{"axes", {0.5}}}), x), "must be an integer");
  CHECK_ERROR(infer_error(make("reduce_sum", {{"axes", {-1}}}), x), "out of bounds");
  CHECK_ERROR(infer_error(make("reduce_sum", {{"axes", {2}}}), x), "out of bounds");
  CHECK_ERROR(infer_error(make("reduce_sum", {{"axes", {18446744073709551615ull}}}), x),
              "out of range");
  CHECK_ERROR(infer_error(make("reduce_sum", {{"axes", {1, 1}}}), x), "twice");
  CHECK_ERROR(infer_error(make("reduce_sum", {{"axes", {nullptr}}}), x), "must be an integer");
  CHECK_ERROR(infer_error(make("integer_pow", {{"y", "2"}}), x), "param 'y' must be an integer");
  CHECK_ERROR(infer_error(make("integer_pow", {{"y", 1e300}}), x), "param 'y' must be an integer");
  CHECK_ERROR(infer_error(make("convert_element_type", {{"new_dtype", "f64"}}), x),
              "unknown dtype 'f64'");
  CHECK_ERROR(infer_error(make("convert_element_type", {{"new_dtype", 3}}), x),
              "must be a dtype name");
  CHECK_ERROR(infer_error(make("broadcast_in_dim",
                               {{"shape", {-1}}, {"broadcast_dimensions", json::array()}}),
                          {F32({})}),
              "holds the size -1");
  CHECK_ERROR(infer_error(make("broadcast_in_dim",
                               {{"shape", {"N +"}}, {"broadcast_dimensions", json::array()}}),
                          {F32({})}),
              "dimension expression");
  CHECK_ERROR(
      infer_error(make("iota", {{"dtype", "f32"}, {"shape", {65536, 65536}}, {"dimension", 0}}),
                  {}),
      "2^31");
  CHECK_ERROR(infer_error(make("iota", {{"dtype", "f32"},
                                        {"shape", {1099511627776ll, 1099511627776ll}},
                                        {"dimension", 0}}),
                          {}),
              "2^31");
  CHECK_ERROR(infer_error(make("all_gather", {{"axes", {1}}, {"all_gather_dimension", 0}}), x),
              "list of axis names");
  CHECK_ERROR(infer_error(make("all_gather",
                               {{"axes", {"data"}}, {"all_gather_dimension", 0}, {"tiled", 1}}),
                          x, PrimContext{nullptr, nullptr, nullptr}),
              "outside a shard_map");
}

BOOST_AUTO_TEST_CASE(symbolic_shapes_bind_through_ctx) {
  const DimBindings dims{{"N", 3}};
  PrimContext ctx;
  ctx.dims = &dims;
  const Eqn e = make("broadcast_in_dim", {{"shape", {"2*N", 2}}, {"broadcast_dimensions", {1}}});
  const Value y = run1(e, {F({2}, {1, 2})}, ctx);
  check_bits(y, {6, 2}, {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2});
  CHECK_ERROR(infer_error(e, {F32({2})}), "not bound");  // no bindings
  const Value v = run1(make("dim_as_value", {{"dim", "N*5"}}), {}, ctx);
  check_bits(v, {}, {15});
  BOOST_CHECK(v.dtype == DType::kI32);
}

BOOST_AUTO_TEST_CASE(random_hostile_equations_only_raise_primitive_errors) {
  // Every primitive under random params (wrong kinds, negative, huge, out-of-range axes) and
  // random operands: infer accepts or throws PrimitiveError, never anything else; what it
  // accepts evaluates to the inferred types (or a PrimitiveError), with no device.
  const std::vector<const char*> keys = {"axes",
                                         "y",
                                         "new_dtype",
                                         "shape",
                                         "broadcast_dimensions",
                                         "new_sizes",
                                         "dimensions",
                                         "permutation",
                                         "index_dtype",
                                         "dtype",
                                         "dimension",
                                         "start_indices",
                                         "limit_indices",
                                         "strides",
                                         "slice_sizes",
                                         "padding_config",
                                         "contracting",
                                         "batch",
                                         "preferred_element_type",
                                         "dim",
                                         "rounding_method",
                                         "exponent_bits",
                                         "mantissa_bits",
                                         "all_gather_dimension",
                                         "tiled",
                                         "scatter_dimension",
                                         "perm",
                                         "split_axis",
                                         "concat_axis",
                                         "sizes",
                                         "axis"};
  const std::vector<json> values = {0,
                                    1,
                                    2,
                                    -1,
                                    4611686018427387904ll,
                                    18446744073709551615ull,
                                    1e300,
                                    0.5,
                                    "x",
                                    "N",
                                    "f32",
                                    "i32",
                                    "data",
                                    "2*N",
                                    "floordiv(N, 0)",
                                    nullptr,
                                    true,
                                    json::array(),
                                    json::object(),
                                    json::array({0}),
                                    json::array({1}),
                                    json::array({1, 0}),
                                    json::array({0, 1}),
                                    json::array({-1}),
                                    json::array({99999999999ll}),
                                    json::array({"data"}),
                                    json::array({json::array({0}), json::array({0})}),
                                    json::array({json::array({1}), json::array({0})}),
                                    json::array({json::array({0, 0, 0})}),
                                    json::array({json::array({0, 1})}),
                                    json::array({2, 3}),
                                    json::array({"N", 2})};
  const std::vector<Shape> shapes = {{}, {1}, {2}, {2, 3}, {3, 2}, {0, 2}, {1, 2, 1}};
  const DimBindings dims{{"N", 2}};
  const MeshShape mesh{{"data", 2}};
  std::mt19937 rng(22);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  int accepted = 0, refused = 0;
  for (const std::string& name : primitive_names()) {
    const Primitive& p = prim(name);
    if (p.holds_jaxpr != nullptr) continue;  // the evaluator's: its jaxpr is what is checked
    for (int trial = 0; trial < 400; ++trial) {
      Eqn e = make(name);
      for (const char* k : keys)
        if (rng() % 3 == 0) e.params[k] = values[pick(values.size())];
      std::vector<ValueType> in;
      const std::size_t n = pick(4);
      for (std::size_t i = 0; i < n; ++i) {
        const DType t = std::array{DType::kF32, DType::kI32, DType::kBool}[pick(3)];
        in.push_back({t, shapes[pick(shapes.size())]});
      }
      PrimContext ctx;
      ctx.dims = &dims;
      if (rng() % 2) ctx.mesh = &mesh;
      std::vector<ValueType> out;
      try {
        out = p.infer(e, in, ctx);
      } catch (const PrimitiveError&) {
        ++refused;
        continue;
      } catch (const std::exception& err) {
        BOOST_ERROR(name << " infer threw a non-PrimitiveError: " << err.what() << " on "
                         << e.params.dump());
        continue;
      }
      ++accepted;
      std::size_t elems = 0;
      for (const ValueType& t : out) elems += shape_size(t.shape);
      if (elems > 1000000) continue;
      std::vector<Value> vals;
      for (const ValueType& t : in) vals.emplace_back(t.dtype, Tensor(t.shape));
      try {
        const std::vector<Value> got = run_raw(e, std::move(vals), ctx);
        BOOST_CHECK_EQUAL(got.size(), out.size());
      } catch (const PrimitiveError&) {
      } catch (const std::exception& err) {
        BOOST_ERROR(name << " eval threw a non-PrimitiveError: " << err.what() << " on "
                         << e.params.dump());
      }
    }
  }
  BOOST_TEST_MESSAGE(accepted << " random equations accepted, " << refused << " refused");
  BOOST_CHECK_GT(accepted, 100);
}

BOOST_AUTO_TEST_SUITE_END()

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
  // jax.lax.erf_inv on JAX 0.10.2 CPU (XLA's polynomial, which meshrun writes out unfused).
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

BOOST_AUTO_TEST_SUITE(shape_ops)

BOOST_AUTO_TEST_CASE(broadcast_reshape_squeeze_expand_transpose) {
  const Value x = F({2, 1}, {1, 2});
  check_bits(
      run1(make("broadcast_in_dim", {{"shape", {2, 3}}, {"broadcast_dimensions", {0, 1}}}), {x}),
      {2, 3}, {1, 1, 1, 2, 2, 2});
  check_bits(run1(make("broadcast_in_dim", {{"shape", {3, 2}}, {"broadcast_dimensions", {1}}}),
                  {F({2}, {5, 6})}),
             {3, 2}, {5, 6, 5, 6, 5, 6});
  check_bits(
      run1(make("broadcast_in_dim", {{"shape", {2, 2}}, {"broadcast_dimensions", json::array()}}),
           {F({}, {7})}),
      {2, 2}, {7, 7, 7, 7});
  check_bits(run1(make("broadcast_in_dim", {{"shape", {1, 2}}, {"broadcast_dimensions", {1}}}),
                  {F({2}, {5, 6})}),
             {1, 2}, {5, 6});
  CHECK_ERROR(
      infer_error(make("broadcast_in_dim", {{"shape", {4, 2}}, {"broadcast_dimensions", {1}}}),
                  {F32({3})}),
      "got operand of shape (3,), target broadcast shape (4, 2), broadcast_dimensions (1,)");
  CHECK_ERROR(
      infer_error(make("broadcast_in_dim", {{"shape", {2, 2}}, {"broadcast_dimensions", {1, 0}}}),
                  {F32({2, 2})}),
      "strictly increasing");

  const Value r = run1(make("reshape", {{"new_sizes", {3, 2}}, {"dimensions", nullptr}}),
                       {F({2, 3}, {1, 2, 3, 4, 5, 6})});
  check_bits(r, {3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK_ERROR(infer_error(make("reshape", {{"new_sizes", {3, 3}}}), {F32({4, 2})}),
              "reshape total size must be unchanged, got new_sizes (3, 3) for shape (4, 2)");

  check_bits(run1(make("squeeze", {{"dimensions", {0, 2}}}), {F({1, 2, 1}, {1, 2})}), {2}, {1, 2});
  CHECK_ERROR(infer_error(make("squeeze", {{"dimensions", {0}}}), {F32({4, 2})}),
              "size not equal to one");
  check_bits(run1(make("expand_dims", {{"dimensions", {0, 2}}}), {F({2}, {1, 2})}), {1, 2, 1},
             {1, 2});

  const Value t =
      run1(make("transpose", {{"permutation", {1, 0}}}), {F({2, 3}, {1, 2, 3, 4, 5, 6})});
  check_bits(t, {3, 2}, {1, 4, 2, 5, 3, 6});
  // (2,3,4) -> permutation (2,0,1): out[k][i][j] = x[i][j][k] = 12i + 4j + k.
  std::vector<float> x3(24);
  for (int i = 0; i < 24; ++i) x3[static_cast<std::size_t>(i)] = static_cast<float>(i);
  const Value t3 = run1(make("transpose", {{"permutation", {2, 0, 1}}}), {F({2, 3, 4}, x3)});
  std::vector<float> want;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(static_cast<float>(12 * i + 4 * j + k));
  check_bits(t3, {4, 2, 3}, want);
  CHECK_ERROR(infer_error(make("transpose", {{"permutation", {0}}}), {F32({2, 3})}),
              "isn't a permutation");
  CHECK_ERROR(infer_error(make("transpose", {{"permutation", {0, 0}}}), {F32({2, 3})}), "twice");
}

BOOST_AUTO_TEST_CASE(iota_concatenate_slice) {
  const Value io = run1(
      make("iota", {{"dtype", "i32"}, {"shape", {2, 3}}, {"dimension", 1}, {"sharding", nullptr}}),
      {});
  BOOST_CHECK(io.dtype == DType::kI32);
  check_bits(io, {2, 3}, {0, 1, 2, 0, 1, 2});
  check_bits(run1(make("iota", {{"dtype", "f32"}, {"shape", {2, 3}}, {"dimension", 0}}), {}),
             {2, 3}, {0, 0, 0, 1, 1, 1});

  const Value c = run1(make("concatenate", {{"dimension", 1}}),
                       {F({2, 1}, {1, 2}), F({2, 2}, {3, 4, 5, 6}), F({2, 0}, {})});
  check_bits(c, {2, 3}, {1, 3, 4, 2, 5, 6});
  check_bits(run1(make("concatenate", {{"dimension", 0}}), {F({1, 2}, {1, 2}), F({1, 2}, {3, 4})}),
             {2, 2}, {1, 2, 3, 4});
  CHECK_ERROR(infer_error(make("concatenate", {{"dimension", 1}}), {F32({2, 1}), F32({3, 1})}),
              "same shape");
  CHECK_ERROR(infer_error(make("concatenate", {{"dimension", 2}}), {F32({2, 1})}), "out of bounds");

  const Value x = F({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  check_bits(
      run1(make("slice",
                {{"start_indices", {1, 1}}, {"limit_indices", {3, 3}}, {"strides", nullptr}}),
           {x}),
      {2, 2}, {11, 12, 21, 22});
  check_bits(run1(make("slice",
                       {{"start_indices", {0, 0}}, {"limit_indices", {3, 4}}, {"strides", {2, 3}}}),
                  {x}),
             {2, 2}, {0, 3, 20, 23});
  CHECK_ERROR(infer_error(make("slice", {{"start_indices", {0, 0}},
                                         {"limit_indices", {4, 4}},
                                         {"strides", nullptr}}),
                          {F32({3, 4})}),
              "0 <= start <= limit <= shape");
  CHECK_ERROR(
      infer_error(make("slice", {{"start_indices", {0}}, {"limit_indices", {1}}}), {F32({3, 4})}),
      "rank");
}

// split is concatenate's transpose under jax.grad (JAX 0.10.2): each part a box of the operand.
BOOST_AUTO_TEST_CASE(split_undoes_concatenate) {
  const Value x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  const std::vector<Value> parts = run_raw(make("split", {{"sizes", {1, 0, 2}}, {"axis", 1}}), {x});
  BOOST_REQUIRE_EQUAL(parts.size(), 3u);
  check_bits(parts[0], {2, 1}, {1, 4});
  check_bits(parts[1], {2, 0}, {});
  check_bits(parts[2], {2, 2}, {2, 3, 5, 6});
  const std::vector<Value> rows = run_raw(make("split", {{"sizes", {1, 1}}, {"axis", 0}}), {x});
  BOOST_REQUIRE_EQUAL(rows.size(), 2u);
  check_bits(rows[1], {1, 3}, {4, 5, 6});
  // Symbolic sizes, as a symbolic export writes them.
  const DimBindings dims{{"N", 2}};
  PrimContext ctx;
  ctx.dims = &dims;
  const std::vector<Value> sym =
      run_raw(make("split", {{"sizes", {"N", 1}}, {"axis", 1}}), {x}, ctx);
  BOOST_REQUIRE_EQUAL(sym.size(), 2u);
  check_bits(sym[0], {2, 2}, {1, 2, 4, 5});
  CHECK_ERROR(infer_error(make("split", {{"sizes", {1, 1}}, {"axis", 1}}), {F32({2, 3})}),
              "add up to");
  CHECK_ERROR(infer_error(make("split", {{"sizes", {3}}, {"axis", 2}}), {F32({2, 3})}),
              "out of bounds");
}

// A symbolic export writes slice and pad positions as dimension expressions ("N_blk"): the
// transpose of pad under jax.grad is such a slice.
BOOST_AUTO_TEST_CASE(slice_and_pad_take_dimension_expressions) {
  const DimBindings dims{{"N", 2}};
  PrimContext ctx;
  ctx.dims = &dims;
  const Value x = F({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  check_bits(run1(make("slice", {{"start_indices", {1, "N - 1"}},
                                 {"limit_indices", {"N + 1", "2*N"}},
                                 {"strides", nullptr}}),
                  {x}, ctx),
             {2, 3}, {11, 12, 13, 21, 22, 23});
  check_bits(run1(make("pad", {{"padding_config", {{"N", 0, 0}}}}), {F({1}, {7}), F({}, {0})}, ctx),
             {3}, {0, 0, 7});
  // pad's transpose under jax.grad crops with a negative symbolic width: "- N".
  check_bits(run1(make("pad", {{"padding_config", {{0, "- N", 0}}}}),
                  {F({3}, {1, 2, 3}), F({}, {0})}, ctx),
             {1}, {1});
  CHECK_ERROR(infer_error(make("slice", {{"start_indices", {0, 0}},
                                         {"limit_indices", {"M", 1}},
                                         {"strides", nullptr}}),
                          {F32({3, 4})}, ctx),
              "M");
  CHECK_ERROR(infer_error(make("pad", {{"padding_config", {{true, 0, 0}}}}), {F32({3}), F32({})}),
              "integers or dimension expressions");
}

BOOST_AUTO_TEST_CASE(dynamic_slices_clamp_their_starts) {
  const Value x = F({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  const Eqn ds = make("dynamic_slice", {{"slice_sizes", {2, 2}}});
  check_bits(run1(ds, {x, I({}, {1}), I({}, {2})}), {2, 2}, {12, 13, 22, 23});
  // Starts clamped to [0, dim - size], as XLA: (5, -1) -> (1, 0).
  check_bits(run1(ds, {x, I({}, {5}), I({}, {-1})}), {2, 2}, {10, 11, 20, 21});
  CHECK_ERROR(infer_error(ds, {F32({3, 4}), T(DType::kI32, {})}),
              "one start index per operand dimension");
  CHECK_ERROR(infer_error(ds, {F32({3, 4}), F32({}), F32({})}), "int32 scalars");
  CHECK_ERROR(infer_error(make("dynamic_slice", {{"slice_sizes", {4, 2}}}),
                          {F32({3, 4}), T(DType::kI32, {}), T(DType::kI32, {})}),
              "less than or equal to operand shape");

  const Eqn dus = make("dynamic_update_slice");
  check_bits(run1(dus, {x, F({1, 2}, {-1, -2}), I({}, {2}), I({}, {3})}), {3, 4},
             {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, -1, -2});
  CHECK_ERROR(infer_error(dus, {F32({3, 4}), F32({4, 1}), T(DType::kI32, {}), T(DType::kI32, {})}),
              "update shape must be smaller");
}

BOOST_AUTO_TEST_CASE(pad_low_high_interior_and_negative) {
  const Eqn p = make("pad", {{"padding_config", {{1, 2, 1}}}});
  check_bits(run1(p, {F({3}, {1, 2, 3}), F({}, {0})}), {8}, {0, 1, 0, 2, 0, 3, 0, 0});
  // Negative low padding crops: [[-1, 0, 0], [0, 1, 0]] of a 2x2.
  const Eqn n = make("pad", {{"padding_config", {{-1, 0, 0}, {0, 1, 0}}}});
  check_bits(run1(n, {F({2, 2}, {1, 2, 3, 4}), F({}, {9})}), {1, 3}, {3, 4, 9});
  // Cropping into the interior: lo -2 with interior 1 of [1, 2, 3] -> [0 1 0 2 0 3] minus 2 = [2 0
  // 3].
  const Eqn c = make("pad", {{"padding_config", {{-2, 0, 1}}}});
  check_bits(run1(c, {F({3}, {1, 2, 3}), F({}, {0})}), {3}, {2, 0, 3});
  CHECK_ERROR(infer_error(make("pad", {{"padding_config", {{-5, 0, 0}}}}), {F32({3}), F32({})}),
              "negative");
  CHECK_ERROR(infer_error(make("pad", {{"padding_config", {{0, 0, -1}}}}), {F32({3}), F32({})}),
              "interior");
  CHECK_ERROR(infer_error(make("pad", {{"padding_config", {{0, 0}}}}), {F32({3}), F32({})}),
              "[lo, hi, interior]");
  CHECK_ERROR(infer_error(make("pad", {{"padding_config", {{0, 0, 0}}}}), {F32({3}), F32({2})}),
              "padding value");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reductions)

BOOST_AUTO_TEST_CASE(reduce_sum_matches_jax) {
  // jnp.sum on JAX 0.10.2 CPU, axis 0, axis 1 and all of a (7, 3).
  const std::vector<float> g{1.64246655f,  1.65742302f,  -2.06956625f, -1.12411869f,  2.3592391f,
                             0.516168714f, -2.4922502f,  0.126056716f, 2.45976663f,   -0.759911537f,
                             -2.26394582f, 1.34330547f,  1.91779089f,  -1.83749902f,  -1.44428766f,
                             2.20967603f,  0.874878407f, -2.43512249f, -0.247374147f, 2.49886823f,
                             -0.396556675f};
  check_bits(run1(make("reduce_sum", {{"axes", {0}}}), {F({7, 3}, g)}), {3},
             {1.14627898f, 3.41502047f, -2.02629232f});
  check_bits(run1(make("reduce_sum", {{"axes", {1}}}), {F({7, 3}, g)}), {7},
             {1.23032331f, 1.75128913f, 0.0935730934f, -1.68055189f, -1.36399579f, 0.649431944f,
              1.85493755f});
  check_bits(run1(make("reduce_sum", {{"axes", {0, 1}}}), {F({7, 3}, g)}), {}, {2.535007f});
  // The fold is sequential in index order: ((1e8 + 1) + -1e8) + 1 = 1 in float32, not 2.
  check_bits(run1(make("reduce_sum", {{"axes", {0}}}), {F({4}, {1e8f, 1, -1e8f, 1})}), {}, {1});
  check_bits(run1(make("reduce_sum", {{"axes", json::array()}}), {F({2}, {1, 2})}), {2}, {1, 2});
  check_bits(run1(make("reduce_sum", {{"axes", {1}}}), {F({2, 0}, {})}), {2}, {0, 0});
  // The middle axis of (2, 2, 2).
  check_bits(run1(make("reduce_sum", {{"axes", {1}}}), {F({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}),
             {2, 2}, {4, 6, 12, 14});
  check_bits(run1(make("reduce_sum", {{"axes", {0}}}), {I({3}, {5, -2, 7})}), {}, {10});
}

BOOST_AUTO_TEST_CASE(other_reductions) {
  const Value x = F({2, 3}, {1, -5, 3, 4, kNaN, -0.0f});
  check_bits(run1(make("reduce_max", {{"axes", {1}}}), {x}), {2}, {3, kNaN});
  check_bits(run1(make("reduce_min", {{"axes", {0}}}), {x}), {3}, {1, kNaN, -0.0f});
  check_bits(run1(make("reduce_max", {{"axes", {0}}}), {F({0}, {})}), {}, {-kInf});
  check_bits(run1(make("reduce_prod", {{"axes", {0}}}), {F({2, 3}, {1, 2, 3, 4, 5, 6})}), {3},
             {4, 10, 18});
  check_bits(run1(make("reduce_and", {{"axes", {1}}}), {B({2, 2}, {1, 1, 1, 0})}), {2}, {1, 0});
  check_bits(run1(make("reduce_or", {{"axes", {1}}}), {B({2, 2}, {0, 0, 1, 0})}), {2}, {0, 1});
  check_bits(run1(make("reduce_max", {{"axes", {0}}}), {I({3}, {-7, 2, -1})}), {}, {2});
  CHECK_ERROR(infer_error(make("reduce_and", {{"axes", {0}}}), {F32({2})}),
              "does not accept dtype float32");
  BOOST_CHECK_THROW(run1(make("reduce_max", {{"axes", {0}}}), {I({0}, {})}), PrimitiveError);
  BOOST_CHECK_THROW(run1(make("reduce_sum", {{"axes", {0}}}), {I({2}, {16000000, 800000})}),
                    PrimitiveError);
  // Exact on int64: a partial beyond 2^24 that comes back is fine, as JAX's int32 sum is.
  check_bits(run1(make("reduce_sum", {{"axes", {0}}}), {I({3}, {16000000, 800001, -16000000})}), {},
             {800001});
  check_bits(run1(make("reduce_prod", {{"axes", {1}}}), {I({2, 3}, {4096, 4096, 0, -2, 3, 5})}),
             {2}, {0, -30});
  check_bits(run1(make("reduce_sum", {{"axes", {0}}}), {I({2, 2}, {1, 2, 3, 4})}), {2}, {4, 6});
}

BOOST_AUTO_TEST_CASE(argmax_argmin) {
  // jnp.argmax([1, nan, 3, nan]) = 1, jnp.argmax([3, 1, 3]) = 0 (JAX 0.10.2).
  const Eqn am = make("argmax", {{"axes", {0}}, {"index_dtype", "i32"}});
  check_bits(run1(am, {F({4}, {1, kNaN, 3, kNaN})}), {}, {1});
  check_bits(run1(am, {F({3}, {3, 1, 3})}), {}, {0});
  const Value a1 = run1(make("argmax", {{"axes", {1}}, {"index_dtype", "i32"}}),
                        {F({2, 3}, {1, 9, 2, 7, 0, 8})});
  BOOST_CHECK(a1.dtype == DType::kI32);
  check_bits(a1, {2}, {1, 2});
  check_bits(run1(make("argmin", {{"axes", {0}}, {"index_dtype", "i32"}}),
                  {F({2, 3}, {1, 9, 2, 7, 0, 2})}),
             {3}, {0, 1, 0});
  CHECK_ERROR(
      infer_error(make("argmax", {{"axes", {0, 1}}, {"index_dtype", "i32"}}), {F32({2, 3})}),
      "one axis");
  CHECK_ERROR(infer_error(make("argmax", {{"axes", {0}}, {"index_dtype", "i32"}}), {F32({0})}),
              "empty");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dot)

json dims_json(std::vector<int> lc, std::vector<int> rc, std::vector<int> lb = {},
               std::vector<int> rb = {}) {
  return {{"contracting", {lc, rc}}, {"batch", {lb, rb}}, {"preferred_element_type", nullptr}};
}

BOOST_AUTO_TEST_CASE(batched_matches_jax) {
  // lax.dot_general(a (2,3,4), b (2,4,5), (((2,),(1,)),((0,),(0,)))) on JAX 0.10.2 CPU.
  const std::vector<float> a{
      2.10367751f,  1.06844974f,  -2.37900519f,  -0.455406249f, 2.49635839f,  -0.187877804f,
      -2.4479444f,  0.818686068f, 2.23697782f,   -1.39513063f,  -1.87746811f, 1.87893355f,
      1.39328766f,  -2.23796844f, -0.816587806f, 2.44839406f,   0.185663611f, -2.49623752f,
      0.457589328f, 2.37832189f,  -1.07045662f,  -2.10247684f,  1.61224186f,  1.68701994f};
  const std::vector<float> b{
      2.27324367f,   -1.32459033f, -1.93191123f,  1.82242262f,    1.46229303f,   -2.19923949f,
      -0.895573199f, 2.43001866f,  0.269384116f,  -2.49943614f,   0.374693036f,  2.40288186f,
      -0.993889213f, -2.14676762f, 1.54708755f,   1.74810004f,    -1.99755371f,  -1.23335254f,
      2.31537509f,   0.636705816f, -2.47944713f,  0.00222039199f, 2.47887492f,   -0.640999198f,
      -2.31369662f,  1.23721325f,  1.99488032f,   -1.75127196f,   -1.54359674f,  2.14903998f,
      0.989812851f,  -2.40410376f, -0.370301813f, 2.4995265f,     -0.273798645f, -2.42897153f,
      0.899717867f,  2.19712424f,  -1.46589255f,  -1.81937981f};
  const Value c =
      run1(make("dot_general", dims_json({2}, {1}, {0}, {0})), {F({2, 3, 4}, a), F({2, 4, 5}, b)});
  check_bits(c, {2, 3, 5},
             {0.74490267f,  -8.55015564f, 1.45837855f,  8.17434788f,  -3.56481814f,  6.60193682f,
              -10.6558838f, -3.85603261f, 11.6495409f,  0.854073942f, 10.7345123f,   -9.97824287f,
              -8.16322803f, 12.0818167f,  5.04987717f,  -12.978776f,  -0.295360148f, 13.0548868f,
              -3.06874108f, -12.2641068f, -8.87266922f, -3.9395566f,  9.88785076f,   1.39156628f,
              -10.2464418f, -2.44897723f, -6.55472136f, 4.13805723f,  5.48838949f,   -5.55235434f});
}

BOOST_AUTO_TEST_CASE(lhs_contracted_first_and_rhs_contracted_last_match_jax) {
  // (4,3) . (4,5) contracting (0, 0): the matmul_tn layout, unmoved.
  const Value tn =
      run1(make("dot_general", dims_json({0}, {0})),
           {F({4, 3},
              {0.352800012f, -2.49980807f, 0.291373014f, 2.42472458f, -0.916197836f, -2.18863034f,
               1.48018384f, 1.80720341f, -1.94588017f, -1.30577147f, 2.28236318f, 0.717631638f}),
            F({4, 5}, {-1.89200628f,  -1.37671387f,  2.24677014f,   0.797745883f,  -2.4523406f,
                       -0.165804744f, 2.49506664f,   -0.477146447f, -2.37211132f,  1.08841336f,
                       2.09163904f,   -1.62740576f,  -1.67227459f,  2.05833244f,   1.1418649f,
                       -2.35257864f,  -0.535631359f, 2.49060488f,   -0.106170088f, -2.46324587f})});
  check_bits(tn, {3, 5},
             {5.09840965f, 3.85469699f, -6.09172297f, -2.28492761f, 6.68052292f, 3.29214025f,
              -3.00801277f, -2.51700926f, 3.6566186f, 1.57473898f, -5.94675827f, -3.07956505f,
              6.74032831f, 1.34265721f, -7.08631563f});
  // (3,4) . (5,4) contracting (1, 1): x @ w.T.
  const Value nt =
      run1(make("dot_general", dims_json({1}, {1})),
           {F({3, 4}, {-2.39731073f, 1.01212478f, 2.13649726f, -1.56267667f, -1.73381269f,
                       2.00946116f, 1.21599674f, -2.32280993f, -0.617434144f, 2.48191595f,
                       -0.0221282728f, -2.47621369f}),
            F({5, 4}, {-0.698538721f, 2.4704206f,   0.0619385652f, -2.48638153f, 0.578774571f,
                       2.3372376f,    -1.18105495f, -2.0328927f,   1.70490909f,  1.59355652f,
                       -2.11555099f,  -1.04840231f, 2.38571262f,   0.433630377f, -2.4974544f,
                       0.209936142f,  2.44335628f,  -0.839562178f, -2.22701025f, 1.4134382f})});
  check_bits(nt, {3, 5},
             {8.19272995f, 1.63150692f, -5.35587406f, -10.944273f, -13.673974f, 12.0260582f,
              6.97896576f, 0.108933195f, -6.78955364f, -11.9145756f, 12.7181196f, 10.5034828f,
              5.54528618f, -0.861368656f, -7.04302931f});
}

BOOST_AUTO_TEST_CASE(vectors_outer_integers_and_empty) {
  check_bits(run1(make("dot_general", dims_json({0}, {0})), {F({3}, {1, 2, 3}), F({3}, {4, 5, 6})}),
             {}, {32});
  check_bits(run1(make("dot_general", dims_json({}, {})), {F({2}, {1, 2}), F({3}, {1, 10, 100})}),
             {2, 3}, {1, 10, 100, 2, 20, 200});
  // Batch dims not in front: lhs (3, 2) batch 1, rhs (2, 3) batch 0, contracting lhs 0 / rhs 1.
  check_bits(run1(make("dot_general", dims_json({0}, {1}, {1}, {0})),
                  {F({3, 2}, {1, 2, 3, 4, 5, 6}), F({2, 3}, {1, 1, 1, 2, 2, 2})}),
             {2}, {9, 24});
  const Value i =
      run1(make("dot_general", dims_json({1}, {0})), {I({1, 2}, {3, 4}), I({2, 1}, {5, 6})});
  BOOST_CHECK(i.dtype == DType::kI32);
  check_bits(i, {1, 1}, {39});
  check_bits(run1(make("dot_general", dims_json({1}, {0})), {F({2, 0}, {}), F({0, 2}, {})}), {2, 2},
             {0, 0, 0, 0});
}

BOOST_AUTO_TEST_CASE(dot_general_errors) {
  CHECK_ERROR(
      infer_error(make("dot_general", dims_json({1}, {0})), {F32({2, 3}), F32({4, 2})}),
      "dot_general requires contracting dimensions to have the same shape, got (3,) and (4,)");
  CHECK_ERROR(infer_error(make("dot_general", dims_json({2}, {1}, {0}, {0})),
                          {F32({2, 3, 4}), F32({3, 4, 5})}),
              "batch dimensions to have the same shape, got (2,) and (3,)");
  CHECK_ERROR(infer_error(make("dot_general", dims_json({2}, {0})), {F32({2, 3}), F32({3, 2})}),
              "less than the number of axes of the lhs");
  CHECK_ERROR(
      infer_error(make("dot_general", dims_json({1}, {0}, {1}, {0})), {F32({2, 3}), F32({3, 2})}),
      "distinct");
  CHECK_ERROR(
      infer_error(make("dot_general", dims_json({1}, {0}, {0}, {})), {F32({2, 3}), F32({3, 2})}),
      "equal numbers of lhs_batch and rhs_batch");
  CHECK_ERROR(infer_error(make("dot_general", {{"contracting", {{1}}}, {"batch", {{}, {}}}}),
                          {F32({2, 3}), F32({3, 2})}),
              "[[lhs axes], [rhs axes]]");
  CHECK_ERROR(
      infer_error(make("dot_general", dims_json({1}, {0})), {F32({2, 3}), T(DType::kI32, {3, 2})}),
      "same dtypes");
  CHECK_ERROR(infer_error(make("dot_general", {{"batch", {{}, {}}}}), {F32({2, 3}), F32({3, 2})}),
              "param 'contracting' missing");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(collectives)

// Runs `body(ctx, device index)` on every device of a data=2 x model=2 mesh.
template <class Body>
void on_mesh(const MeshShape& shape, Body body) {
  Mesh mesh(shape);
  mesh.run([&](Device& dev) {
    PrimContext ctx;
    ctx.mesh = &mesh.shape();
    ctx.device = &dev;
    body(ctx, dev.index());
  });
}

const MeshShape k2x2{{"data", 2}, {"model", 2}};

BOOST_AUTO_TEST_CASE(psum_pmean_several_operands) {
  // Device d holds x = [d, 10 d] and y = [[d + 0.5]]; psum over data sums devices d and d ^ 2.
  std::vector<std::vector<Value>> got(4);
  on_mesh(k2x2, [&](PrimContext& ctx, int d) {
    const auto f = static_cast<float>(d);
    got[static_cast<std::size_t>(d)] =
        run_raw(make("psum", {{"axes", {"data"}}}), {F({2}, {f, 10 * f}), F({1, 1}, {f + 0.5f})},
                ctx, {true, false});
    std::vector<Value> m =
        run_raw(make("pmean", {{"axes", {"data", "model"}}}), {F({1}, {f})}, ctx);
    got[static_cast<std::size_t>(d)].push_back(std::move(m[0]));
    std::vector<Value> inv =
        run_raw(make("psum_invariant", {{"axes", {"model"}}}), {I({}, {f})}, ctx);
    got[static_cast<std::size_t>(d)].push_back(std::move(inv[0]));
  });
  for (int d = 0; d < 4; ++d) {
    const auto& g = got[static_cast<std::size_t>(d)];
    const float other = static_cast<float>(d ^ 2);
    const float f = static_cast<float>(d);
    check_bits(g[0], {2}, {f + other, 10 * f + 10 * other});
    check_bits(g[1], {1, 1}, {f + 0.5f + other + 0.5f});
    check_bits(g[2], {1}, {(0 + 1 + 2 + 3) / 4.0f});
    const float row = static_cast<float>(d / 2 * 2);
    check_bits(g[3], {}, {row + row + 1});
    BOOST_CHECK(g[3].dtype == DType::kI32);
  }
}

BOOST_AUTO_TEST_CASE(all_gather_along_any_dimension) {
  std::vector<std::vector<Value>> got(4);
  on_mesh(k2x2, [&](PrimContext& ctx, int d) {
    const auto f = static_cast<float>(d);
    const Value x = F({2, 2}, {f, f + 0.25f, f + 0.5f, f + 0.75f});
    auto& g = got[static_cast<std::size_t>(d)];
    g.push_back(run1(
        make("all_gather", {{"axes", {"model"}}, {"all_gather_dimension", 0}, {"tiled", true}}),
        {x}, ctx));
    g.push_back(run1(
        make("all_gather", {{"axes", {"model"}}, {"all_gather_dimension", 1}, {"tiled", true}}),
        {x}, ctx));
    g.push_back(run1(
        make("all_gather", {{"axes", {"data"}}, {"all_gather_dimension", 2}, {"tiled", false}}),
        {x}, ctx));
    g.push_back(run1(make("pvary", {{"axes", {"data"}}}), {x}, ctx));
    g.push_back(run1(make("axis_index", {{"axes", {"model", "data"}}}), {}, ctx));
  });
  // Device d = 2 i + j; its model group is {2i, 2i + 1}, its data group {j, j + 2}.
  for (int d = 0; d < 4; ++d) {
    const auto& g = got[static_cast<std::size_t>(d)];
    const float a = static_cast<float>(d / 2 * 2), b = a + 1;
    check_bits(g[0], {4, 2},
               {a, a + 0.25f, a + 0.5f, a + 0.75f, b, b + 0.25f, b + 0.5f, b + 0.75f});
    check_bits(g[1], {2, 4},
               {a, a + 0.25f, b, b + 0.25f, a + 0.5f, a + 0.75f, b + 0.5f, b + 0.75f});
    const float p = static_cast<float>(d % 2), q = p + 2;
    check_bits(g[2], {2, 2, 2},
               {p, q, p + 0.25f, q + 0.25f, p + 0.5f, q + 0.5f, p + 0.75f, q + 0.75f});
    const float f = static_cast<float>(d);
    check_bits(g[3], {2, 2}, {f, f + 0.25f, f + 0.5f, f + 0.75f});
    // (model, data) row-major: model coordinate * 2 + data coordinate.
    check_bits(g[4], {}, {static_cast<float>(d % 2 * 2 + d / 2)});
  }
}

BOOST_AUTO_TEST_CASE(reduce_scatter_ppermute_all_to_all) {
  std::vector<std::vector<Value>> got(4);
  on_mesh(k2x2, [&](PrimContext& ctx, int d) {
    const auto f = static_cast<float>(d);
    auto& g = got[static_cast<std::size_t>(d)];
    // x[r][c] = 100 d + 10 r + c, (2, 4).
    std::vector<float> xv;
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 4; ++c) xv.push_back(100 * f + static_cast<float>(10 * r + c));
    const Value x = F({2, 4}, xv);
    g.push_back(run1(
        make("reduce_scatter", {{"axes", {"model"}}, {"scatter_dimension", 1}, {"tiled", true}}),
        {x}, ctx));
    g.push_back(run1(
        make("psum_scatter", {{"axes", {"model"}}, {"scatter_dimension", 0}, {"tiled", false}}),
        {x}, ctx));
    g.push_back(run1(make("ppermute", {{"axes", {"model"}}, {"perm", {{0, 1}}}}), {x}, ctx));
    g.push_back(
        run1(make("all_to_all",
                  {{"axes", {"model"}}, {"split_axis", 1}, {"concat_axis", 0}, {"tiled", true}}),
             {x}, ctx));
  });
  for (int d = 0; d < 4; ++d) {
    const auto& g = got[static_cast<std::size_t>(d)];
    const int j = d % 2, lo = d / 2 * 2;  // model rank, the first device of the model group
    const float base =
        static_cast<float>(100 * lo + 100 * (lo + 1));  // sum of 100 d over the group
    // Tiled along dim 1: columns [2j, 2j + 2) of the sum (2 * (10 r + c) + base).
    std::vector<float> rs;
    for (int r = 0; r < 2; ++r)
      for (int c = 2 * j; c < 2 * j + 2; ++c)
        rs.push_back(base + static_cast<float>(2 * (10 * r + c)));
    check_bits(g[0], {2, 2}, rs);
    // Untiled along dim 0 (size 2 = the group): row j of the sum.
    std::vector<float> row;
    for (int c = 0; c < 4; ++c) row.push_back(base + static_cast<float>(2 * (10 * j + c)));
    check_bits(g[1], {4}, row);
    // ppermute (0 -> 1): rank 1 gets rank 0's block, rank 0 zeros.
    std::vector<float> pp;
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 4; ++c)
        pp.push_back(j == 1 ? static_cast<float>(100 * lo + 10 * r + c) : 0.0f);
    check_bits(g[2], {2, 4}, pp);
    // all_to_all split 1 concat 0: chunk j (columns [2j, 2j+2)) of every member, stacked by source.
    std::vector<float> aa;
    for (int src = 0; src < 2; ++src)
      for (int r = 0; r < 2; ++r)
        for (int c = 2 * j; c < 2 * j + 2; ++c)
          aa.push_back(static_cast<float>(100 * (lo + src) + 10 * r + c));
    check_bits(g[3], {4, 2}, aa);
  }
}

BOOST_AUTO_TEST_CASE(collective_errors) {
  const MeshShape mesh{{"data", 4}};
  PrimContext in_map;
  in_map.mesh = &mesh;
  const std::vector<ValueType> x{F32({4, 2})};
  CHECK_ERROR(infer_error(make("psum", {{"axes", {"data"}}}), x), "psum outside a shard_map");
  CHECK_ERROR(infer_error(make("psum", {{"axes", {"model"}}}), x, in_map),
              "psum: unknown axis name 'model' (the mesh's axes are ('data',))");
  CHECK_ERROR(infer_error(make("psum", {{"axes", {"data", "data"}}}), x, in_map), "named twice");
  CHECK_ERROR(infer_error(make("psum"), x, in_map), "param 'axes' missing");
  CHECK_ERROR(infer_error(make("psum", {{"axes", {"data"}}}), {}, in_map), "at least 1 operand");
  CHECK_ERROR(infer_error(make("pmean", {{"axes", {"data"}}}), {T(DType::kI32, {2})}, in_map),
              "int32");
  CHECK_ERROR(infer_error(make("reduce_scatter",
                               {{"axes", {"data"}}, {"scatter_dimension", 1}, {"tiled", true}}),
                          x, in_map),
              "not divisible by the group size 4");
  CHECK_ERROR(infer_error(make("ppermute", {{"axes", {"data"}}, {"perm", {{0, 4}}}}), x, in_map),
              "[0, 4)");
  CHECK_ERROR(
      infer_error(make("ppermute", {{"axes", {"data"}}, {"perm", {{0, 1}, {2, 1}}}}), x, in_map),
      "unique");
  CHECK_ERROR(
      infer_error(make("all_to_all", {{"axes", {"data"}}, {"split_axis", 1}, {"concat_axis", 0}}),
                  x, in_map),
      "not divisible");
  CHECK_ERROR(infer_error(make("axis_index", {{"axes", {"x"}}}), {}, in_map),
              "unknown axis name 'x'");
  CHECK_ERROR(infer_error(make("all_gather",
                               {{"axes", {"data"}}, {"all_gather_dimension", 3}, {"tiled", false}}),
                          x, in_map),
              "out of bounds");
  const std::vector<ValueType> ok =
      prim("all_gather")
          .infer(make("all_gather",
                      {{"axes", {"data"}}, {"all_gather_dimension", 1}, {"tiled", false}}),
                 x, in_map);
  BOOST_CHECK(ok[0] == F32({4, 4, 2}));
}

BOOST_AUTO_TEST_SUITE_END()

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
                        "axis_index"}) {
    BOOST_CHECK_MESSAGE(find_primitive(n) != nullptr, "missing " << n);
  }
  for (const char* n : {"cumsum", "while", "scan", ""})
    BOOST_CHECK_MESSAGE(find_primitive(n) == nullptr, n << " should not be a primitive");
}

// The primitives that hold a jaxpr are entries too, as in JAX: each names its param, has no
// infer or eval of its own (the evaluator runs the jaxpr), and only they are so.
BOOST_AUTO_TEST_CASE(the_holders_of_a_jaxpr_are_entries_naming_their_param) {
  const std::map<std::string, std::string> holders = {{"jit", "jaxpr"},
                                                      {"pjit", "jaxpr"},
                                                      {"custom_jvp_call", "call_jaxpr"},
                                                      {"custom_vjp_call", "call_jaxpr"},
                                                      {"shard_map", "jaxpr"}};
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
    BOOST_CHECK_EQUAL(is_call(name), name != "shard_map");
  }
  BOOST_CHECK(nested_jaxpr_param("add") == nullptr && !is_call("add"));
  BOOST_CHECK(nested_jaxpr_param("nope") == nullptr && !is_call("nope"));
}

BOOST_AUTO_TEST_SUITE_END()
