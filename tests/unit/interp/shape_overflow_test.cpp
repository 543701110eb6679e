// Shape and index arithmetic on a program file's numbers is checked (issue #31, class 4): a size
// that would wrap int64 is refused naming the primitive and the field, never run as the small
// size it wrapped to (pad's f32[16777217] with interior 2^40 once ran as an f32[2], exit 0).
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interp/ir.hpp"
#include "interp/primitives.hpp"
#include "interp/value.hpp"

using namespace meshrun;
using namespace meshrun::interp;
using json = nlohmann::json;

namespace {

constexpr std::int64_t k2e40 = std::int64_t{1} << 40;

Eqn make(const std::string& prim, json params) {
  Eqn e;
  e.primitive = prim;
  e.params = std::move(params);
  e.where = "exports[0].jaxpr.eqns[0]";
  return e;
}

// The message infer throws, or "" when it accepts.
std::string infer_error(const Eqn& e, const std::vector<ValueType>& in) {
  try {
    find_primitive(e.primitive)->infer(e, in, PrimContext{});
  } catch (const PrimitiveError& err) {
    return err.what();
  }
  return "";
}

BOOST_AUTO_TEST_CASE(pad_whose_size_wraps_int64_is_refused) {
  // (2^24) * 2^40 = 2^64: 0 in int64 arithmetic, so lo = -(2^24 - 1) made it 2 elements.
  const std::size_t n = (std::size_t{1} << 24) + 1;
  const Eqn e = make("pad", {{"padding_config", {{-((1 << 24) - 1), 0, k2e40}}}});
  BOOST_TEST(infer_error(e, {{DType::kF32, {n}}, {DType::kF32, {}}}) ==
             "pad: the size of dimension 0 after padding overflows int64 (16777216 * "
             "1099511627776)");
  // lo + hi alone, at the edge of what a param holds.
  const Eqn far = make("pad", {{"padding_config", {{k2e40, k2e40, k2e40}}}});
  BOOST_TEST(infer_error(far, {{DType::kF32, {std::size_t{1} << 23}}, {DType::kF32, {}}})
                 .find("overflows int64") != std::string::npos);
  // A large but representable size is still only refused by the element limit.
  const Eqn big = make("pad", {{"padding_config", {{0, 0, k2e40}}}});
  BOOST_TEST(infer_error(big, {{DType::kF32, {3}}, {DType::kF32, {}}}) ==
             "an array of shape (2199023255555,) is above the limit of 2^31 elements");
}

BOOST_AUTO_TEST_CASE(concatenate_whose_size_wraps_is_refused) {
  const std::size_t half = std::size_t{1} << 62;
  const Eqn e = make("concatenate", {{"dimension", 0}});
  BOOST_TEST(infer_error(e, {{DType::kF32, {half}}, {DType::kF32, {half}}}) ==
             "concatenate: the size of dimension 0 overflows int64 (4611686018427387904 + "
             "4611686018427387904)");
}

BOOST_AUTO_TEST_CASE(strides_of_an_empty_array_of_huge_dimensions_are_refused) {
  // f32[0, 2^40, 2^40] has no element, but its row-major strides do not fit int64: refused
  // (signed overflow before, undefined behaviour that UBSan reports).
  const Shape shape = {0, std::size_t{1} << 40, std::size_t{1} << 40};
  Value x(DType::kF32, Tensor(shape));
  const Eqn e = make("transpose", {{"permutation", {0, 2, 1}}});
  Value* const in[] = {&x};
  const bool owned[] = {false};
  PrimContext ctx;
  std::string what;
  try {
    find_primitive("transpose")
        ->eval(e, std::span<Value* const>(in), std::span<const bool>(owned), ctx);
  } catch (const PrimitiveError& err) {
    what = err.what();
  }
  BOOST_TEST(what ==
             "the strides of an array of shape (0, 1099511627776, 1099511627776) "
             "overflow int64");
}

}  // namespace
