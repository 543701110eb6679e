// The interpreter's primitives, one family per file: the reductions (lib/interp/reductions.cpp):
// reduce_sum against JAX's bits, the others, argmax and argmin. Expected values are worked out by
// hand or computed by JAX 0.10.2 on CPU (jax.lax on the same float32 inputs, pasted with 9
// significant digits, so they are JAX's bits).
#include "unit/interp/primitives/prim_test_util.hpp"

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

namespace {
// The message eval throws, or "" when it runs.
std::string run_error(const Eqn& e, std::vector<Value> in) {
  try {
    run1(e, std::move(in));
  } catch (const PrimitiveError& err) {
    return err.what();
  }
  return "";
}
}  // namespace

BOOST_AUTO_TEST_CASE(an_int32_product_beyond_2_24_is_named_by_its_true_value) {
  // 1 * 2 * ... * 16 = 16! = 20922789888000, as reduce_sum names its exact sum; the product was
  // clamped at 2^24 + 1 and named "16777217".
  const Eqn prod = make("reduce_prod", {{"axes", {0}}});
  std::vector<float> to16;
  for (int i = 1; i <= 16; ++i) to16.push_back(static_cast<float>(i));
  BOOST_TEST(run_error(prod, {I({16}, to16)}) ==
             "reduce_prod: the integer result 20922789888000 is beyond 2^24, which meshrun holds "
             "exactly");
  BOOST_TEST(run_error(prod, {I({2}, {-4096, 4097})}) ==
             "reduce_prod: the integer result -16781312 is beyond 2^24, which meshrun holds "
             "exactly");
  // Beyond int64 (2^24^3 = 2^72), only the sign is held; a 0 after it still gives 0.
  BOOST_TEST(run_error(prod, {I({4}, {16777216, -16777216, 16777216, 3})}) ==
             "reduce_prod: the integer result is beyond -2^63, beyond 2^24, which meshrun holds "
             "exactly");
  check_bits(run1(prod, {I({4}, {16777216, 16777216, 16777216, 0})}), {}, {0});
  BOOST_TEST(run_error(make("reduce_sum", {{"axes", {0}}}), {I({2}, {16000000, 800000})}) ==
             "reduce_sum: the integer result 16800000 is beyond 2^24, which meshrun holds exactly");
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
