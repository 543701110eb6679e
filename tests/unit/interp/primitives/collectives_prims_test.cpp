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
    g.push_back(run1(make("all_gather_invariant",
                          {{"axes", {"model"}}, {"all_gather_dimension", 0}, {"tiled", true}}),
                     {x}, ctx));
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
    // all_gather(..., to='invarying'): the same gather.
    check_bits(g[5], {4, 2},
               {a, a + 0.25f, a + 0.5f, a + 0.75f, b, b + 0.25f, b + 0.5f, b + 0.75f});
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

// pmax and pmin of f32, i32 and bool operands in one equation, over one axis, both axes and both
// orders: each result has its operand's dtype and the fold from -inf (+inf) with std::max
// (std::min) over the group in rank order -- JAX's bits on CPU (jax.lax.pmax / pmin, JAX 0.10.2):
// a NaN is passed over (on a group where all are NaN: -inf, +inf), of -0.0 and +0.0 the first
// member's stays, bool's max is or and its min and. A large operand (20000 floats) goes alone.
BOOST_AUTO_TEST_CASE(pmax_pmin_of_each_dtype_fold_the_group_in_rank_order) {
  // Device d = 2 i + j (data i, model j).
  auto xf = [](int d) {
    const auto f = static_cast<float>(d);
    return std::vector<float>{d % 2 ? -0.0f : 0.0f, d == 1 || d == 3 ? kNaN : 1.5f * f - 2,
                              d == 2 ? -kInf : 0.25f * f};
  };
  auto xi = [](int d) {
    return std::vector<float>{static_cast<float>(d - 2), 10.0f * static_cast<float>(d % 2)};
  };
  auto xb = [](int d) { return std::vector<float>{d == 3 ? 1.0f : 0.0f, d != 0 ? 1.0f : 0.0f}; };
  auto big = [](int d) {
    std::vector<float> v(20000);
    for (std::size_t k = 0; k < v.size(); ++k)
      v[k] = static_cast<float>((k * 7 + static_cast<std::size_t>(d) * 3) % 11) - 5;
    return v;
  };
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::vector<int>>>> groups{
      // axes, and each device's group in rank order
      {{"data"}, {{0, 2}, {1, 3}, {0, 2}, {1, 3}}},
      {{"model"}, {{0, 1}, {0, 1}, {2, 3}, {2, 3}}},
      {{"data", "model"}, {{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}}},
      {{"model", "data"}, {{0, 2, 1, 3}, {0, 2, 1, 3}, {0, 2, 1, 3}, {0, 2, 1, 3}}},
  };
  // got[d][group][op]: the results of pmax (op 0) and pmin (op 1).
  std::vector<std::vector<std::vector<std::vector<Value>>>> got(4);
  on_mesh(k2x2, [&](PrimContext& ctx, int d) {
    for (const auto& group : groups) {
      std::vector<std::vector<Value>> per_op;
      for (const char* op : {"pmax", "pmin"}) {
        per_op.push_back(run_raw(make(op, {{"axes", group.first}}),
                                 {F({3}, xf(d)), I({2}, xi(d)), B({2}, xb(d)), F({20000}, big(d))},
                                 ctx, {false, true, false, true}));
      }
      got[static_cast<std::size_t>(d)].push_back(std::move(per_op));
    }
  });
  auto fold = [](const std::vector<int>& members, auto input, std::size_t i, bool max) {
    float acc = max ? -kInf : kInf;
    for (int m : members) {
      const float v = input(m)[i];
      acc = max ? std::max(acc, v) : std::min(acc, v);
    }
    return acc;
  };
  std::vector<std::vector<float>> bigs;
  for (int d = 0; d < 4; ++d) bigs.push_back(big(d));
  auto big_of = [&](int d) -> const std::vector<float>& {
    return bigs[static_cast<std::size_t>(d)];
  };
  for (int d = 0; d < 4; ++d) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const std::vector<int>& members = groups[g].second[static_cast<std::size_t>(d)];
      for (int op = 0; op < 2; ++op) {
        BOOST_TEST_CONTEXT("device " << d << " group " << g << (op ? " pmin" : " pmax")) {
          const bool max = op == 0;
          const auto& r = got[static_cast<std::size_t>(d)][g][static_cast<std::size_t>(op)];
          BOOST_REQUIRE_EQUAL(r.size(), 4u);
          std::vector<float> wf, wi, wb, wbig;
          for (std::size_t i = 0; i < 3; ++i) wf.push_back(fold(members, xf, i, max));
          for (std::size_t i = 0; i < 2; ++i) wi.push_back(fold(members, xi, i, max));
          for (std::size_t i = 0; i < 2; ++i) wb.push_back(fold(members, xb, i, max));
          for (std::size_t i = 0; i < 20000; ++i) wbig.push_back(fold(members, big_of, i, max));
          check_bits(r[0], {3}, wf);
          // The zero's sign is the first member's: check it by bits, which check_bits does.
          BOOST_TEST(std::signbit(r[0].t.data[0]) == (members[0] % 2 == 1));
          check_bits(r[1], {2}, wi);
          check_bits(r[2], {2}, wb);
          check_bits(r[3], {20000}, wbig);
          BOOST_CHECK(r[0].dtype == DType::kF32);
          BOOST_CHECK(r[1].dtype == DType::kI32);
          BOOST_CHECK(r[2].dtype == DType::kBool);
        }
      }
    }
  }
  // By hand, for the data group {1, 3} of device 1: element 1 is NaN on both -> -inf and +inf;
  // bool [0, 1] | [1, 1] = [1, 1], & = [0, 1].
  check_bits(got[1][0][0][0], {3}, {-0.0f, -kInf, 0.75f});
  check_bits(got[1][0][1][0], {3}, {-0.0f, kInf, 0.25f});
  check_bits(got[1][0][0][2], {2}, {1.0f, 1.0f});
  check_bits(got[1][0][1][2], {2}, {0.0f, 1.0f});
}

// With no axes, pmax and pmin are the identity, NaN included (no collective runs).
BOOST_AUTO_TEST_CASE(pmax_pmin_over_no_axes_are_the_identity) {
  std::vector<std::vector<Value>> got(4);
  on_mesh(k2x2, [&](PrimContext& ctx, int d) {
    got[static_cast<std::size_t>(d)] = run_raw(make("pmax", {{"axes", json::array()}}),
                                               {F({2}, {kNaN, static_cast<float>(d)})}, ctx);
  });
  for (int d = 0; d < 4; ++d)
    check_bits(got[static_cast<std::size_t>(d)][0], {2}, {kNaN, static_cast<float>(d)});
}

// reduce_scatter (psum_scatter) of int32, as JAX: the int32 sum of the group, scattered -- exact in
// meshrun's float32 up to 2^24, and refused beyond (JAX's would wrap only at 2^31).
BOOST_AUTO_TEST_CASE(reduce_scatter_of_int32_sums_exactly_and_refuses_beyond_2_24) {
  std::vector<Value> got(4);
  std::vector<std::string> beyond(4);
  on_mesh(k2x2, [&](PrimContext& ctx, int d) {
    // x = [d - 1, 100 d, -7, 8388608 (2^23)] on every device, scattered over model (2 members).
    const Value x =
        I({4}, {static_cast<float>(d - 1), 100.0f * static_cast<float>(d), -7.0f, 8388608.0f});
    got[static_cast<std::size_t>(d)] = run1(
        make("reduce_scatter", {{"axes", {"model"}}, {"scatter_dimension", 0}, {"tiled", true}}),
        {x}, ctx);
    // 2^24 in every element on each of the 4 devices: 2^26, beyond what float32 holds of every
    // integer, in every device's block.
    try {
      (void)run1(make("psum_scatter",
                      {{"axes", {"data", "model"}}, {"scatter_dimension", 0}, {"tiled", false}}),
                 {I({4}, std::vector<float>(4, 16777216.0f))}, ctx);
    } catch (const PrimitiveError& e) {
      beyond[static_cast<std::size_t>(d)] = e.what();
    }
  });
  for (int d = 0; d < 4; ++d) {
    const int lo = d / 2 * 2, j = d % 2;  // the model group {lo, lo + 1}, this device's rank
    const std::vector<float> sum{static_cast<float>(2 * lo - 1), static_cast<float>(200 * lo + 100),
                                 -14.0f, 16777216.0f};
    const Value& g = got[static_cast<std::size_t>(d)];
    BOOST_CHECK(g.dtype == DType::kI32);
    check_bits(g, {2},
               {sum[static_cast<std::size_t>(2 * j)], sum[static_cast<std::size_t>(2 * j + 1)]});
    BOOST_TEST(contains(beyond[static_cast<std::size_t>(d)],
                        "psum_scatter: an integer result is beyond 2^24"),
               beyond[static_cast<std::size_t>(d)]);
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
  CHECK_ERROR(infer_error(make("psum", {{"axes", {"data"}}}), {T(DType::kBool, {2})}, in_map),
              "psum does not accept dtype bool");
  CHECK_ERROR(infer_error(make("pmax", {{"axes", {"data"}}}), x), "pmax outside a shard_map");
  CHECK_ERROR(infer_error(make("pmin", {{"axes", {"model"}}}), x, in_map),
              "pmin: unknown axis name 'model'");
  CHECK_ERROR(infer_error(make("pmax", {{"axes", {"data"}}}), {}, in_map), "at least 1 operand");
  for (const char* op : {"pmax", "pmin"}) {
    for (DType t : {DType::kF32, DType::kI32, DType::kBool}) {
      const std::vector<ValueType> operands{T(t, {2, 3}), F32({})};
      const std::vector<ValueType> types =
          prim(op).infer(make(op, {{"axes", {"data"}}}), operands, in_map);
      BOOST_CHECK(types.size() == 2 && types[0] == T(t, {2, 3}) && types[1] == F32({}));
    }
    // An all-reduce: each result depends on its own operand only (rules.cpp's data flow).
    BOOST_TEST(prim(op).reduction);
    BOOST_TEST(prim(op).collective);
  }
  BOOST_TEST(infer_error(make("reduce_scatter",
                              {{"axes", {"data"}}, {"scatter_dimension", 0}, {"tiled", true}}),
                         {T(DType::kI32, {4, 2})}, in_map) == "");
  CHECK_ERROR(infer_error(make("reduce_scatter",
                               {{"axes", {"data"}}, {"scatter_dimension", 0}, {"tiled", true}}),
                          {T(DType::kBool, {4, 2})}, in_map),
              "reduce_scatter does not accept dtype bool");
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
