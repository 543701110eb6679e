// sort_bench: meshrun's sort primitive (lib/interp/ops/sorting.cpp) beside std::sort of the same
// floats, without JSON, the mesh or collectives (issue #49: "sort within 2x of std::sort").
//
//   sort_bench ROWS LEN [--reps R]
//       ROWS rows of LEN random float32 each (normal, seed fixed), sorted along the last axis:
//         std::sort        std::sort of each row's floats (operator<; no NaN in the input)
//         sort            meshrun's `sort` (is_stable, 1 key: JAX's jnp.sort)
//         argsort         meshrun's `sort` of the row and an int32 iota (jnp.argsort)
//         unstable        meshrun's `sort` with is_stable false
//         top_k(k=8)      meshrun's `top_k`
//         cumsum          meshrun's `cumsum` along the rows, reverse (its costliest windows)
//         rw_sum 3x3      meshrun's `reduce_window_sum`, a 3x3 window of stride 1, 'SAME' padding
//       (the last two: what their budget weights per element, docs/program-format.md, rest on)
//       the best of R rounds (default 5) of each, one thread, in thread CPU time (the machine
//       may be shared: wall time would count the other processes).
//
// Prints one line per kernel: seconds of the best round, ns an element, and the ratio to
// std::sort. Results are not checked here (tests/unit/interp/primitives/sorting_prims_test.cpp
// and tests/jax/dtype_rules/sort-* do that).
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "interp/primitives.hpp"

namespace {

using namespace meshrun;
using namespace meshrun::interp;

double best_of(int reps, const std::function<void()>& prepare, const std::function<void()>& run) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    prepare();
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    run();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    best = std::min(best, static_cast<double>(t1.tv_sec - t0.tv_sec) +
                              1e-9 * static_cast<double>(t1.tv_nsec - t0.tv_nsec));
  }
  return best;
}

std::vector<Value> eval(const char* name, const nlohmann::json& params, std::vector<Value>& in) {
  const Primitive* p = find_primitive(name);
  if (p == nullptr) {
    std::fprintf(stderr, "sort_bench: no primitive %s\n", name);
    std::exit(2);
  }
  Eqn e;
  e.primitive = name;
  e.params = params;
  std::vector<ValueType> types;
  std::vector<Value*> ptrs;
  for (Value& v : in) {
    types.push_back(v.type());
    ptrs.push_back(&v);
  }
  PrimContext ctx;
  p->infer(e, types, ctx);
  const std::unique_ptr<bool[]> owned(new bool[in.size() + 1]());
  return p->eval(e, ptrs, std::span<const bool>(owned.get(), in.size()), ctx);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: sort_bench ROWS LEN [--reps R]\n");
    return 2;
  }
  const std::size_t rows = std::strtoull(argv[1], nullptr, 10);
  const std::size_t len = std::strtoull(argv[2], nullptr, 10);
  int reps = 5;
  for (int i = 3; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reps") reps = std::atoi(argv[i + 1]);
  if (rows == 0 || len == 0 || len > (std::size_t{1} << 24) || reps < 1) {
    std::fprintf(stderr, "sort_bench: ROWS >= 1, 1 <= LEN <= 2^24, R >= 1\n");
    return 2;
  }
  const std::size_t n = rows * len;
  std::vector<float> data(n);
  std::mt19937 rng(49);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& x : data) x = dist(rng);
  Tensor iota({rows, len});
  for (std::size_t i = 0; i < n; ++i) iota.data[i] = static_cast<float>(i % len);

  std::vector<float> work;
  const double t_std = best_of(
      reps, [&] { work = data; },
      [&] {
        for (std::size_t r = 0; r < rows; ++r)
          std::sort(work.begin() + static_cast<std::ptrdiff_t>(r * len),
                    work.begin() + static_cast<std::ptrdiff_t>((r + 1) * len));
      });
  std::vector<Value> in;
  const auto one = [&] {
    in.clear();
    in.emplace_back(DType::kF32, Tensor({rows, len}, data));
  };
  const auto two = [&] {
    one();
    in.emplace_back(DType::kI32, iota);
  };
  const nlohmann::json stable = {{"dimension", 1}, {"num_keys", 1}, {"is_stable", true}};
  const nlohmann::json unstable = {{"dimension", 1}, {"num_keys", 1}, {"is_stable", false}};
  const nlohmann::json topk = {{"k", std::min<std::size_t>(8, len)}, {"axis", 1}};
  const nlohmann::json cum = {{"axis", 1}, {"reverse", true}};
  const nlohmann::json rw = {{"window_dimensions", {3, 3}},
                             {"window_strides", {1, 1}},
                             {"padding", {{1, 1}, {1, 1}}},
                             {"base_dilation", {1, 1}},
                             {"window_dilation", {1, 1}}};
  struct Row {
    const char* name;
    double t;
  };
  const Row results[] = {
      {"std::sort", t_std},
      {"sort", best_of(reps, one, [&] { eval("sort", stable, in); })},
      {"argsort", best_of(reps, two, [&] { eval("sort", stable, in); })},
      {"unstable", best_of(reps, one, [&] { eval("sort", unstable, in); })},
      {"top_k(k=8)", best_of(reps, one, [&] { eval("top_k", topk, in); })},
      {"cumsum", best_of(reps, one, [&] { eval("cumsum", cum, in); })},
      {"rw_sum 3x3", best_of(reps, one, [&] { eval("reduce_window_sum", rw, in); })},
  };
  std::printf("sort_bench %zu x %zu float32, best of %d, one thread, thread CPU time\n", rows, len,
              reps);
  for (const Row& r : results) {
    std::printf("  %-11s %9.4f s  %6.2f ns/element  %5.2fx std::sort\n", r.name, r.t,
                r.t * 1e9 / static_cast<double>(n), r.t / t_std);
  }
  return 0;
}
