// The interpreter's primitives, one family per file: the shape primitives
// (lib/interp/shape_ops.cpp, slicing.cpp): broadcast, reshape, squeeze, transpose, iota,
// concatenate, split, slices, pad. Expected values are worked out by hand or computed by JAX 0.10.2
// on CPU (jax.lax on the same float32 inputs, pasted with 9 significant digits, so they are JAX's
// bits).
#include "unit/interp/primitives/prim_test_util.hpp"

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
