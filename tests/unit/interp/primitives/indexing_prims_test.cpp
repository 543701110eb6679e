// The interpreter's primitives, one family per file: indexing (lib/interp/ops/indexing.cpp),
// gather and the scatters. Expected values are worked out by hand from JAX's rules
// (docs/program-format.md#indexing); JAX's own outputs for every mode and dtype are
// tests/jax/dtype_rules/{gather,scatter}_*. Here: a 2-D window with operand batching dims by
// hand, and random equations -- random dimension numbers, shapes, modes and indices of any value
// -- each refused by infer with a PrimitiveError or evaluated to its inferred type with every
// element of the result written from the operand, the updates or the fill (a read outside the
// arrays would show as a value from none of them, or under `make asan`).
#include "unit/interp/primitives/prim_test_util.hpp"

#include <algorithm>
#include <set>

BOOST_AUTO_TEST_SUITE(indexing)

namespace {

json gather_params(json offset, json collapsed, json start_map, json slice, const char* mode) {
  return {{"offset_dims", std::move(offset)},
          {"collapsed_slice_dims", std::move(collapsed)},
          {"start_index_map", std::move(start_map)},
          {"slice_sizes", std::move(slice)},
          {"mode", mode},
          {"fill_value", -1}};
}

}  // namespace

// x f32[2, 3, 4] = 100 b + 10 r + c; per batch b (operand dim 0 with the indices' dim 0), a
// window [1, 2] of dims (1, 2) at the 2-D start (r, c): out[b, j, 0, w] = x[b, r, c + w].
BOOST_AUTO_TEST_CASE(gather_with_batching_dims_and_a_2d_window) {
  std::vector<float> x;
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) x.push_back(static_cast<float>(100 * b + 10 * r + c));
  json p = gather_params({2, 3}, json::array(), {1, 2}, {1, 1, 2}, "clip");
  p["operand_batching_dims"] = {0};
  p["start_indices_batching_dims"] = {0};
  // offset dims (2, 3) of a rank-4 output: dims 1 and 2 of the operand's window (sizes 1, 2)
  // starts per (b, j): (2, 1) (1, 3) -> clipped to (1, 2), (-4, 9) -> (0, 2)
  const Value idx = I({2, 2, 2}, {2, 1, 1, 3, -4, 9, 0, 0});
  const Value out = run1(make("gather", p), {F({2, 3, 4}, x), idx});
  check_bits(out, {2, 2, 1, 2}, {21, 22, 12, 13, 102, 103, 100, 101});
  p["mode"] = "fill";
  check_bits(run1(make("gather", p), {F({2, 3, 4}, x), idx}), {2, 2, 1, 2},
             {21, 22, -1, -1, -1, -1, 100, 101});
}

// The same window scattered back: clip moves (1, 3) to (1, 2) and adds there; fill drops the
// windows whose start is out of bounds; repeated starts add in index order.
BOOST_AUTO_TEST_CASE(scatter_add_with_batching_dims_and_a_2d_window) {
  json p = {{"update_window_dims", {2, 3}},           {"inserted_window_dims", json::array()},
            {"scatter_dims_to_operand_dims", {1, 2}}, {"operand_batching_dims", {0}},
            {"scatter_indices_batching_dims", {0}},   {"mode", "clip"}};
  const Value idx = I({2, 2, 2}, {0, 0, 1, 3, 2, 2, 2, 2});
  const Value up = F({2, 2, 1, 2}, {1, 2, 4, 8, 16, 32, 64, 128});
  std::vector<float> want(24, 0.0f);
  want[0] = 1, want[1] = 2, want[6] = 4, want[7] = 8;  // b 0: (0, 0), (1, 2)
  want[12 + 10] = 16 + 64, want[12 + 11] = 32 + 128;   // b 1: (2, 2) twice
  check_bits(run1(make("scatter-add", p), {F({2, 3, 4}, std::vector<float>(24)), idx, up}),
             {2, 3, 4}, want);
  p["mode"] = "fill";
  want[6] = 0, want[7] = 0;  // (1, 3) with a window of 2 leaves the array: dropped
  check_bits(run1(make("scatter-add", p), {F({2, 3, 4}, std::vector<float>(24)), idx, up}),
             {2, 3, 4}, want);
}

// Random equations: whatever the params, shapes and index values, infer refuses (a
// PrimitiveError) or eval gives the inferred type, every element one of the operand's, the
// updates' (or a combination, for the arithmetic scatters) or the fill's.
BOOST_AUTO_TEST_CASE(random_equations_never_leave_the_arrays) {
  std::mt19937 rng(49);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  auto dims = [&](std::size_t max_len, int max_val) {
    json a = json::array();
    const std::size_t n = pick(max_len + 1);
    int v = static_cast<int>(pick(2)) - (pick(8) == 0 ? 1 : 0);
    for (std::size_t i = 0; i < n; ++i) {
      a.push_back(v);
      v += 1 + static_cast<int>(pick(2));
      if (pick(10) == 0) v = static_cast<int>(pick(static_cast<std::size_t>(max_val) + 2));
    }
    return a;
  };
  auto shape = [&](std::size_t min_rank, std::size_t max_rank) {
    Shape s;
    const std::size_t r = min_rank + pick(max_rank - min_rank + 1);
    for (std::size_t i = 0; i < r; ++i) s.push_back(pick(4));
    return s;
  };
  const std::vector<float> index_values = {0, 1, 2, 3, -1, -2, 4, 5, 16777216, -16777216};
  const char* modes[] = {"clip", "fill", "promise_in_bounds"};
  const char* prims[] = {"gather",      "scatter",     "scatter-add", "scatter-sub",
                         "scatter-mul", "scatter-min", "scatter-max"};
  int accepted = 0, refused = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const std::string prim = prims[pick(7)];
    const bool gather = prim == "gather";
    const Shape os = shape(0, 3);
    Shape is = shape(1, 3);
    Eqn e = make(prim);
    e.params["mode"] = modes[pick(3)];
    e.params["operand_batching_dims"] = pick(3) == 0 ? dims(1, 3) : json::array();
    e.params[gather ? "start_indices_batching_dims" : "scatter_indices_batching_dims"] =
        e.params["operand_batching_dims"].empty() ? json::array() : dims(1, 3);
    Shape us;
    if (gather) {
      e.params["offset_dims"] = dims(3, 4);
      e.params["collapsed_slice_dims"] = dims(2, 3);
      e.params["start_index_map"] = dims(2, 3);
      json sizes = json::array();
      for (std::size_t i = 0; i < os.size(); ++i) sizes.push_back(pick(3));
      e.params["slice_sizes"] = sizes;
      e.params["fill_value"] = -7;
    } else {
      e.params["update_window_dims"] = dims(3, 4);
      e.params["inserted_window_dims"] = dims(2, 3);
      e.params["scatter_dims_to_operand_dims"] = dims(2, 3);
      // updates: the indices' batch shape with the window dims inserted, sometimes wrong
      us = Shape(is.begin(), is.end() - 1);
      for (const json& w : e.params["update_window_dims"]) {
        const auto at = static_cast<std::size_t>(std::max(0, w.get<int>()));
        us.insert(us.begin() + static_cast<std::ptrdiff_t>(std::min(at, us.size())), pick(3));
      }
      if (pick(10) == 0) us = shape(0, 3);
    }
    if (pick(2) == 0) {
      // A well-formed equation half the time: collapsed / inserted dims a random subset of the
      // operand's, the starts mapped to a random ordering of them and others, window sizes
      // within the operand, offset / window dims a random sorted choice of the positions.
      std::vector<int> all(os.size()), sub, starts;
      for (std::size_t d = 0; d < os.size(); ++d) all[d] = static_cast<int>(d);
      for (int d : all)
        if (pick(2) == 0 && os[static_cast<std::size_t>(d)] > 0) sub.push_back(d);
      starts = sub;
      for (int d : all)
        if (pick(3) == 0 && std::find(sub.begin(), sub.end(), d) == sub.end()) starts.push_back(d);
      std::shuffle(starts.begin(), starts.end(), rng);
      Shape batch(pick(3));
      for (auto& b : batch) b = 1 + pick(3);
      Shape is2 = batch;
      is2.push_back(starts.size());
      std::vector<std::size_t> window;  // sizes of the operand dims not in sub
      for (int d : all)
        if (std::find(sub.begin(), sub.end(), d) == sub.end())
          window.push_back(pick(os[static_cast<std::size_t>(d)] + 1));
      const std::size_t out_rank = window.size() + batch.size();
      std::vector<int> pos(out_rank);
      for (std::size_t i = 0; i < out_rank; ++i) pos[i] = static_cast<int>(i);
      std::shuffle(pos.begin(), pos.end(), rng);
      pos.resize(window.size());
      std::sort(pos.begin(), pos.end());
      e.params["operand_batching_dims"] = json::array();
      e.params[gather ? "start_indices_batching_dims" : "scatter_indices_batching_dims"] =
          json::array();
      if (gather) {
        e.params["collapsed_slice_dims"] = sub;
        e.params["start_index_map"] = starts;
        e.params["offset_dims"] = pos;
        json sizes = json::array();
        for (std::size_t d = 0, w = 0; d < os.size(); ++d)
          sizes.push_back(std::find(sub.begin(), sub.end(), static_cast<int>(d)) != sub.end()
                              ? 1
                              : window[w++]);
        e.params["slice_sizes"] = sizes;
      } else {
        e.params["inserted_window_dims"] = sub;
        e.params["scatter_dims_to_operand_dims"] = starts;
        e.params["update_window_dims"] = pos;
        us.clear();
        for (std::size_t i = 0, w = 0, b = 0; i < out_rank; ++i)
          us.push_back(std::find(pos.begin(), pos.end(), static_cast<int>(i)) != pos.end()
                           ? window[w++]
                           : batch[b++]);
      }
      is = is2;
    }
    const DType dt = pick(5) == 0 ? DType::kI32 : DType::kF32;
    std::vector<float> od(shape_size(os));
    for (std::size_t i = 0; i < od.size(); ++i) od[i] = static_cast<float>(1000 + i);
    std::vector<float> id(shape_size(is));
    for (float& v : id) v = index_values[pick(index_values.size())];
    std::vector<Value> in = {Value(dt, Tensor(os, od)), I(is, id)};
    std::vector<float> ud(shape_size(us));
    for (std::size_t i = 0; i < ud.size(); ++i) ud[i] = static_cast<float>(2000 + i);
    if (!gather) in.push_back(Value(dt, Tensor(us, ud)));
    std::vector<ValueType> types;
    for (const Value& v : in) types.push_back(v.type());
    try {
      prim_test::prim(prim).infer(e, types, PrimContext{});
    } catch (const PrimitiveError&) {
      ++refused;
      continue;
    }
    ++accepted;
    Value out;
    try {
      out = run1(e, in);
    } catch (const PrimitiveError& err) {  // an int32 result beyond 2^24: refused, not wrong
      BOOST_CHECK_MESSAGE(dt == DType::kI32,
                          prim << ": " << err.what() << " on " << e.params.dump());
      continue;
    } catch (const std::exception& err) {
      BOOST_ERROR(prim << ": " << err.what() << " on " << e.params.dump());
      continue;
    }
    const std::set<float> from_operand(od.begin(), od.end()), from_updates(ud.begin(), ud.end());
    for (float v : out.t.data) {
      bool ok = from_operand.count(v) || (gather && v == -7.0f);
      if (prim == "scatter" || prim == "scatter-min" || prim == "scatter-max")
        ok = ok || from_updates.count(v);
      if (prim == "scatter-add" || prim == "scatter-sub" || prim == "scatter-mul") ok = true;
      BOOST_CHECK_MESSAGE(ok, prim << " wrote " << v << " on " << e.params.dump());
      if (!ok) break;
    }
  }
  BOOST_TEST_MESSAGE(accepted << " random equations accepted, " << refused << " refused");
  BOOST_CHECK_GT(accepted, 1000);
}

BOOST_AUTO_TEST_SUITE_END()
