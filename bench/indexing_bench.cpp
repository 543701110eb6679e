// indexing_bench: gather and scatter of N elements beside a copy of N elements (issue #49: "a
// gather or scatter of N elements within a small factor of a copy of N elements"), each the
// interpreter's own primitive called as the evaluator calls it (infer once, then eval: the
// output allocated, the operand copied unless lent), on float32 data and random int32 indices.
//
//   indexing_bench [N] [--reps R]     N elements (default 2^20); the best of R rounds (default 11)
//
//   copy            dynamic_slice of N of f32[2N]: an allocation and a memcpy of N (the baseline)
//   raw-loop        no primitive: the plain loop o[k] = x[i[k]] over the same random indices
//                   (what the memory system allows: the floor of a gather's time)
//   gather          N scalars at random indices i32[N, 1], mode promise_in_bounds (x[i])
//   gather-seq      the same at indices 0, 1, ..., N - 1 (the kernel's own cost, no cache miss)
//   gather-fill     the same in mode fill (jnp.take): each index bounds-checked
//   gather-batched  take_along_axis: x f32[N/8, 8], element k[b, j] of row b (batching dims)
//   gather-rows     W[ids]: N/64 random rows of 64 from f32[N/64, 64] (an embedding lookup)
//   scatter-add-seq the same at indices 0, 1, ..., N - 1
//   scatter-add     N scalars added at random indices into f32[N] (x.at[i].add), mode fill;
//                   the operand copied first (not its last use)
//   scatter-add-own the same into an operand lent to it (its last use: no copy)
//   scatter-rows    N/64 rows of 64 added into f32[N/64, 64] at random rows (the embedding
//                   lookup's gradient), the operand copied first
//
// Prints one line each: ms of the best round, ns per element, and the ratio to copy.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interp/primitives.hpp"
#include "interp/value.hpp"

namespace {

using json = nlohmann::json;
using meshrun::Shape;
using meshrun::Tensor;
using meshrun::interp::DType;
using meshrun::interp::Eqn;
using meshrun::interp::PrimContext;
using meshrun::interp::Primitive;
using meshrun::interp::Value;
using meshrun::interp::ValueType;

Value random_f32(Shape s, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  Tensor t(std::move(s));
  for (float& v : t.data) v = d(rng);
  return Value(DType::kF32, std::move(t));
}

Value random_i32(Shape s, std::size_t below, unsigned seed) {
  std::mt19937 rng(seed);
  Tensor t(std::move(s));
  for (float& v : t.data) v = static_cast<float>(rng() % below);
  return Value(DType::kI32, std::move(t));
}

struct Case {
  std::string name;
  std::string prim;
  json params;
  std::vector<Value> in;
  bool lend_operand = false;  // the operand's last use: eval may take its storage
};

// The best of `reps` rounds of eval, seconds (wall; each round on fresh copies of the operands
// when the first is lent).
double best(const Case& c, int reps) {
  const Primitive* p = meshrun::interp::find_primitive(c.prim);
  if (p == nullptr) {
    std::fprintf(stderr, "no primitive %s\n", c.prim.c_str());
    std::exit(1);
  }
  Eqn e;
  e.primitive = c.prim;
  e.params = c.params;
  e.where = "bench";
  std::vector<ValueType> types;
  for (const Value& v : c.in) types.push_back(v.type());
  PrimContext ctx;
  p->infer(e, types, ctx);
  double b = 1e30;
  for (int r = 0; r < reps; ++r) {
    std::vector<Value> in = c.in;
    std::vector<Value*> ptrs;
    for (Value& v : in) ptrs.push_back(&v);
    std::unique_ptr<bool[]> own(new bool[in.size()]());
    own[0] = c.lend_operand;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Value> out = p->eval(e, ptrs, std::span<const bool>(own.get(), in.size()), ctx);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    b = std::min(b, s);
    if (out.empty() || out[0].t.data.empty()) std::exit(2);
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = std::size_t{1} << 20;
  int reps = 11;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      n = std::strtoull(argv[i], nullptr, 10);
    }
  }
  if (n < 64 || n % 64 != 0) {
    std::fprintf(stderr, "indexing_bench: N must be a multiple of 64\n");
    return 2;
  }
  const std::size_t rows = n / 64;
  const json gd = {{"offset_dims", json::array()},
                   {"collapsed_slice_dims", {0}},
                   {"start_index_map", {0}},
                   {"slice_sizes", {1}},
                   {"mode", "promise_in_bounds"}};
  json gfill = gd;
  gfill["mode"] = "fill";
  gfill["fill_value"] = 0;
  const json gbatch = {{"offset_dims", json::array()},
                       {"collapsed_slice_dims", {1}},
                       {"start_index_map", {1}},
                       {"operand_batching_dims", {0}},
                       {"start_indices_batching_dims", {0}},
                       {"slice_sizes", {1, 1}},
                       {"mode", "clip"}};
  const json grows = {{"offset_dims", {1}},
                      {"collapsed_slice_dims", {0}},
                      {"start_index_map", {0}},
                      {"slice_sizes", {1, 64}},
                      {"mode", "promise_in_bounds"}};
  const json sd = {{"update_window_dims", json::array()},
                   {"inserted_window_dims", {0}},
                   {"scatter_dims_to_operand_dims", {0}},
                   {"mode", "fill"}};
  const json srows = {{"update_window_dims", {1}},
                      {"inserted_window_dims", {0}},
                      {"scatter_dims_to_operand_dims", {0}},
                      {"mode", "fill"}};
  const Value x2 = random_f32({2 * n}, 1), x = random_f32({n}, 2), u = random_f32({n}, 3);
  const Value idx = random_i32({n, 1}, n, 4);
  const Value start = random_i32({}, n, 5);
  Value seq(DType::kI32, Tensor(Shape{n, 1}));
  for (std::size_t k = 0; k < n; ++k) seq.t.data[k] = static_cast<float>(k);
  const Value table = random_f32({rows, 64}, 6), urows = random_f32({rows, 64}, 7);
  const Value ids = random_i32({rows, 1}, rows, 8);
  const Value xb = random_f32({n / 8, 8}, 9), kb = random_i32({n / 8, 8, 1}, 8, 10);
  const Value zeros(DType::kF32, Tensor(Shape{n})), zrows(DType::kF32, Tensor(Shape{rows, 64}));
  const std::vector<Case> cases = {
      {"copy", "dynamic_slice", {{"slice_sizes", {n}}}, {x2, start}},
      {"gather", "gather", gd, {x, idx}},
      {"gather-seq", "gather", gd, {x, seq}},
      {"gather-fill", "gather", gfill, {x, idx}},
      {"gather-batched", "gather", gbatch, {xb, kb}},
      {"gather-rows", "gather", grows, {table, ids}},
      {"scatter-add-seq", "scatter-add", sd, {zeros, seq, u}, true},
      {"scatter-add", "scatter-add", sd, {zeros, idx, u}},
      {"scatter-add-own", "scatter-add", sd, {zeros, idx, u}, true},
      {"scatter-rows", "scatter-add", srows, {zrows, ids, urows}},
  };
  std::printf("# indexing_bench N = %zu, best of %d\n", n, reps);
  double copy = 0, raw = 1e30;
  {
    std::vector<float> o(n);
    const float* xs = x.t.data.data();
    const float* is = idx.t.data.data();
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (std::size_t k = 0; k < n; ++k) o[k] = xs[static_cast<std::size_t>(is[k])];
      raw = std::min(raw,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (o[n / 2] != xs[static_cast<std::size_t>(is[n / 2])]) return 3;
    }
  }
  for (const Case& c : cases) {
    const double s = best(c, reps);
    if (c.name == "copy") copy = s;
    if (c.name == "gather")
      std::printf("%-16s %8.3f ms %7.2f ns/element %6.1fx copy\n", "raw-loop", raw * 1e3,
                  raw / static_cast<double>(n) * 1e9, raw / copy);
    std::printf("%-16s %8.3f ms %7.2f ns/element %6.1fx copy\n", c.name.c_str(), s * 1e3,
                s / static_cast<double>(n) * 1e9, s / copy);
  }
  return 0;
}
