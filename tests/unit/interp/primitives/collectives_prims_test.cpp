// The interpreter's primitives, one family per file: the collectives as primitives
// (lib/interp/collective_ops.cpp) on a data=2 x model=2 mesh. Expected values are worked out by
// hand or computed by JAX 0.10.2 on CPU (jax.lax on the same float32 inputs, pasted with 9
// significant digits, so they are JAX's bits).
#include "unit/interp/primitives/prim_test_util.hpp"

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

// `op` (psum or pmean over `axes`) on `in` with the lent flags `owned`, by the primitive itself:
// the operands stay the caller's, so what a call leaves in those not lent can be checked. It runs
// on the device threads, so no Boost.Test assertion (not thread-safe; prim() has one): a missing
// primitive throws, and the Mesh hands that to the test.
std::vector<Value> reduce(const std::string& op, const std::vector<std::string>& axes,
                          std::vector<Value*> in, const std::vector<bool>& owned,
                          PrimContext& ctx) {
  std::unique_ptr<bool[]> own(new bool[in.size()]);
  for (std::size_t i = 0; i < in.size(); ++i) own[i] = owned[i];
  const Primitive* p = find_primitive(op);
  if (p == nullptr) throw std::runtime_error("no primitive " + op);
  return p->eval(make(op, {{"axes", axes}}), in, std::span<const bool>(own.get(), in.size()), ctx);
}

BOOST_AUTO_TEST_CASE(psum_pmean_of_large_and_small_operands) {
  // Operands of 16Ki floats or more are reduced in place, each on its own, the others packed
  // into one collective: every result must still be its own operand's sum, whatever the order of
  // large and small, lent or not, empty or given twice -- and an operand not lent must be left
  // as it was. Device d holds s = [d, 0.25], a = [k % 7 + d] (20000), e = [] (0 floats),
  // t = [d + 0.5] and b = [(k % 5) / 2 + d] (16384, exactly the limit); its data group is
  // {d, d ^ 2}, the whole mesh sums devices 0..3.
  auto large = [](std::size_t n, int mod, float scale, float f) {
    std::vector<float> v(n);
    for (std::size_t k = 0; k < n; ++k) v[k] = static_cast<float>(k % mod) * scale + f;
    return v;
  };
  struct Got {
    std::vector<Value> sum, twice, mean, all_large;
    std::vector<Value> left;  // the operands not lent, after the calls
  };
  std::vector<Got> got(4);
  on_mesh(k2x2, [&](PrimContext& ctx, int d) {
    const auto f = static_cast<float>(d);
    Got& g = got[static_cast<std::size_t>(d)];
    Value s = F({2}, {f, 0.25f}), a = F({20000}, large(20000, 7, 1, f)), e = F({0}, {});
    Value t = F({1}, {f + 0.5f}), b = F({128, 128}, large(16384, 5, 0.5f, f));
    // small, large (not lent), empty, small (lent), large (lent): packed, alone, packed.
    g.sum = reduce("psum", {"data"}, {&s, &a, &e, &t, &b}, {false, false, true, true, true}, ctx);
    g.left.push_back(s);
    g.left.push_back(a);
    // One large value given twice (never lent), beside a small one.
    Value a2 = F({20000}, large(20000, 7, 1, f)), s2 = F({2}, {f, 0.25f});
    g.twice = reduce("psum", {"data"}, {&a2, &s2, &a2}, {false, true, false}, ctx);
    g.left.push_back(a2);
    Value m1 = F({20000}, large(20000, 7, 1, f)), m2 = F({2}, {f, 0.25f}),
          m3 = F({128, 128}, large(16384, 5, 0.5f, f));
    g.mean = reduce("pmean", {"data", "model"}, {&m1, &m2, &m3}, {true, false, false}, ctx);
    g.left.push_back(m2);
    g.left.push_back(m3);
    // Only large operands: no packed collective at all.
    Value l1 = F({20000}, large(20000, 7, 1, f)), l2 = F({128, 128}, large(16384, 5, 0.5f, f));
    g.all_large = reduce("psum", {"data"}, {&l1, &l2}, {true, true}, ctx);
  });
  for (int d = 0; d < 4; ++d) {
    const Got& g = got[static_cast<std::size_t>(d)];
    const auto f = static_cast<float>(d);
    const auto pair = static_cast<float>(d + (d ^ 2));
    std::vector<float> a(20000), b(16384), ma(20000), mb(16384);
    for (std::size_t k = 0; k < a.size(); ++k) {
      a[k] = 2 * static_cast<float>(k % 7) + pair;
      ma[k] = (4 * static_cast<float>(k % 7) + 6) / 4;
    }
    for (std::size_t k = 0; k < b.size(); ++k) {
      b[k] = static_cast<float>(k % 5) + pair;
      mb[k] = (2 * static_cast<float>(k % 5) + 6) / 4;
    }
    BOOST_REQUIRE_EQUAL(g.sum.size(), 5u);
    check_bits(g.sum[0], {2}, {pair, 0.5f});
    check_bits(g.sum[1], {20000}, a);
    check_bits(g.sum[2], {0}, {});
    check_bits(g.sum[3], {1}, {pair + 1});
    check_bits(g.sum[4], {128, 128}, b);
    BOOST_REQUIRE_EQUAL(g.twice.size(), 3u);
    check_bits(g.twice[0], {20000}, a);
    check_bits(g.twice[1], {2}, {pair, 0.5f});
    check_bits(g.twice[2], {20000}, a);
    BOOST_REQUIRE_EQUAL(g.mean.size(), 3u);
    check_bits(g.mean[0], {20000}, ma);
    check_bits(g.mean[1], {2}, {1.5f, 0.25f});
    check_bits(g.mean[2], {128, 128}, mb);
    BOOST_REQUIRE_EQUAL(g.all_large.size(), 2u);
    check_bits(g.all_large[0], {20000}, a);
    check_bits(g.all_large[1], {128, 128}, b);
    // What was not lent is as it was.
    std::vector<float> own_a(20000), own_b(16384);
    for (std::size_t k = 0; k < own_a.size(); ++k) own_a[k] = static_cast<float>(k % 7) + f;
    for (std::size_t k = 0; k < own_b.size(); ++k) own_b[k] = static_cast<float>(k % 5) / 2 + f;
    check_bits(g.left[0], {2}, {f, 0.25f});
    check_bits(g.left[1], {20000}, own_a);
    check_bits(g.left[2], {20000}, own_a);
    check_bits(g.left[3], {2}, {f, 0.25f});
    check_bits(g.left[4], {128, 128}, own_b);
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
