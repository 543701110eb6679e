// The interpreter's primitives, one family per file: the param_* helpers (lib/interp/params.cpp) on
// hostile params, symbolic shapes bound through the context, and random hostile equations that may
// only raise PrimitiveErrors. Expected values are worked out by hand or computed by JAX 0.10.2 on
// CPU (jax.lax on the same float32 inputs, pasted with 9 significant digits, so they are JAX's
// bits).
#include "unit/interp/primitives/prim_test_util.hpp"

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
  // The params of ops/cumulative.cpp, ops/sorting.cpp and ops/windows.cpp (issue #49).
  const std::vector<const char*> more_keys = {"reverse",
                                              "num_keys",
                                              "is_stable",
                                              "k",
                                              "reduction_dimension",
                                              "is_max_k",
                                              "aggregate_to_topk",
                                              "window_dimensions",
                                              "window_strides",
                                              "padding",
                                              "base_dilation",
                                              "window_dilation",
                                              "select_prim"};
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
      for (const char* k : more_keys)
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
