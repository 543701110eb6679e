// What the primitives' tests share (tests/unit/interp/primitives/*_test.cpp, one file per family
// of lib/interp's primitives): equations and values built by hand, a primitive inferred then
// evaluated, and bit and ulp comparisons.
#pragma once

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

namespace meshrun::interp::prim_test {

using json = nlohmann::json;

inline const float kNaN = std::numeric_limits<float>::quiet_NaN();
inline const float kInf = std::numeric_limits<float>::infinity();

inline Eqn make(const std::string& prim, json params = json::object()) {
  Eqn e;
  e.primitive = prim;
  e.params = std::move(params);
  e.where = "exports[0].jaxpr.eqns[0]";
  return e;
}

inline Value F(Shape s, std::vector<float> d) {
  return Value(DType::kF32, Tensor(std::move(s), std::move(d)));
}
inline Value I(Shape s, std::vector<float> d) {
  return Value(DType::kI32, Tensor(std::move(s), std::move(d)));
}
inline Value B(Shape s, std::vector<float> d) {
  return Value(DType::kBool, Tensor(std::move(s), std::move(d)));
}
inline ValueType T(DType d, Shape s) { return {d, std::move(s)}; }
inline ValueType F32(Shape s) { return {DType::kF32, std::move(s)}; }

inline const Primitive& prim(const std::string& name) {
  const Primitive* p = find_primitive(name);
  BOOST_REQUIRE_MESSAGE(p != nullptr, "no primitive " << name);
  return *p;
}

// Infers, then evaluates; throws std::runtime_error when a value has not its inferred type. No
// Boost.Test assertion: it also runs on the mesh's device threads, and Boost.Test is not
// thread-safe (a failure there reaches the test as the DeviceError Mesh::run throws).
inline std::vector<Value> run_raw(const Eqn& e, std::vector<Value> in, PrimContext ctx = {},
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

inline Value run1(const Eqn& e, std::vector<Value> in, PrimContext ctx = {},
                  std::vector<bool> owned = {}) {
  std::vector<Value> out = run_raw(e, std::move(in), ctx, std::move(owned));
  if (out.size() != 1) throw std::runtime_error(e.primitive + ": not one result");
  return std::move(out[0]);
}

// The message infer throws, or "" when it accepts.
inline std::string infer_error(const Eqn& e, std::vector<ValueType> in, PrimContext ctx = {}) {
  try {
    prim(e.primitive).infer(e, in, ctx);
  } catch (const PrimitiveError& err) {
    return err.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

#define CHECK_ERROR(expr, part)                                                                   \
  do {                                                                                            \
    const std::string msg_ = (expr);                                                              \
    BOOST_CHECK_MESSAGE(contains(msg_, part), "expected '" << part << "', got '" << msg_ << "'"); \
  } while (0)

// Bit-for-bit (NaN by NaN-ness).
inline void check_bits(const Value& v, const Shape& shape, const std::vector<float>& want) {
  BOOST_REQUIRE(v.t.shape == shape);
  BOOST_REQUIRE_EQUAL(v.t.data.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const float g = v.t.data[i];
    const bool same = (std::isnan(g) && std::isnan(want[i])) || std::memcmp(&g, &want[i], 4) == 0;
    BOOST_CHECK_MESSAGE(same, "element " << i << ": got " << g << ", want " << want[i]);
  }
}

// Distance in units in the last place.
inline long ulps(float a, float b) {
  std::int32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  if (x < 0) x = std::numeric_limits<std::int32_t>::min() - x;
  if (y < 0) y = std::numeric_limits<std::int32_t>::min() - y;
  return std::labs(static_cast<long>(x) - static_cast<long>(y));
}

}  // namespace meshrun::interp::prim_test

using namespace meshrun;
using namespace meshrun::interp;
using namespace meshrun::interp::prim_test;
using json = nlohmann::json;
