// kernels_bench: GFLOP/s of meshrun's matrix kernels, without JSON, the mesh or collectives.
//
//   kernels_bench gemm M K N [--threads T] [--a-transposed] [--portable | --target NAME] [--reps R]
//       T threads (default 1), each its own (M,K) @ (K,N) product; the best of R rounds.
//       --a-transposed: A stored (K,M) and read transposed (matmul_tn's path, A's tiles packed).
//   kernels_bench tp-mlp B D H O [--devices N] [--portable | --target NAME] [--reps R]
//       tp-mlp's per-device compute on N threads (default 8) pinned round robin as meshrun pins
//       its devices: relu(x @ w1_d + b1_d) then @ w2_d, H/N hidden units each; flops counted as
//       the program's, 2BDH + 2BHO.
//   --portable runs gemm_portable (the plain std::fma loop every product ran before) instead;
//   --target AVX2 (or another Highway target name this CPU has) forces gemm's dispatch there.
//
// Prints one line: what ran, the target, seconds of the best round, GFLOP/s (and per CPU second,
// which is per core while it ran). Results are not
// checked here (kernels_test does that bit for bit); inputs are random.
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tensor/gemm.hpp"

namespace {

using meshrun::Gemm;

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

struct Options {
  std::vector<std::size_t> dims;
  std::size_t threads = 0;
  bool portable = false;
  bool a_transposed = false;
  int reps = 5;
};

void run_gemm(const Gemm& g, bool portable) {
  if (portable) {
    meshrun::gemm_portable(g);
  } else {
    meshrun::gemm(g);
  }
}

void pin(std::size_t index) {
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(index % cpus, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// One thread's work, repeated: set up once, then `body` per round.
struct Work {
  std::vector<std::vector<float>> buffers;
  std::vector<Gemm> products;
};

Work gemm_work(std::size_t m, std::size_t k, std::size_t n, unsigned seed, bool a_transposed) {
  Work w;
  w.buffers = {random_floats(m * k, seed), random_floats(k * n, seed + 1),
               std::vector<float>(m * n)};
  w.products.push_back(Gemm::dense(w.buffers[0].data(), w.buffers[1].data(), w.buffers[2].data(), m,
                                   k, n, a_transposed));
  return w;
}

Work tp_mlp_work(std::size_t b, std::size_t d, std::size_t h, std::size_t o, unsigned seed) {
  Work w;
  // x, w1, b1, w2, hidden, out
  w.buffers = {random_floats(b * d, 1),    random_floats(d * h, seed),
               random_floats(h, seed + 1), random_floats(h * o, seed + 2),
               std::vector<float>(b * h),  std::vector<float>(b * o)};
  auto& v = w.buffers;
  Gemm hidden = Gemm::dense(v[0].data(), v[1].data(), v[4].data(), b, d, h);
  hidden.bias = v[2].data();
  hidden.relu = true;
  w.products.push_back(hidden);
  w.products.push_back(Gemm::dense(v[4].data(), v[3].data(), v[5].data(), b, h, o));
  return w;
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// Best wall time over `reps` rounds of every thread running its work once (all start together),
// and the CPU time of that round: on a machine shared with other work, flops per CPU second say
// what the kernel does per core when it runs, whatever the scheduler gave it.
struct Round {
  double wall_s = 1e30, cpu_s = 0;
};
Round best_round(std::vector<Work>& works, bool portable, int reps) {
  Round best;
  for (int r = 0; r < reps; ++r) {
    const double c0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::vector<std::jthread> threads;
      for (std::size_t t = 0; t < works.size(); ++t) {
        threads.emplace_back([&, t] {
          pin(t);
          for (const Gemm& g : works[t].products) run_gemm(g, portable);
        });
      }
    }
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    if (dt.count() < best.wall_s) best = {dt.count(), cpu_seconds() - c0};
  }
  return best;
}

// Makes gemm dispatch to the kernel called `name` (AVX3, AVX2, portable); false if this CPU has
// none.
bool force_target(const std::string& name) { return meshrun::gemm_use_target(name); }

int usage() {
  std::fprintf(
      stderr,
      "usage: kernels_bench gemm M K N [--threads T] [--a-transposed] [--portable | --target "
      "NAME] [--reps R]\n"
      "       kernels_bench tp-mlp B D H O [--devices N] [--portable | --target NAME] "
      "[--reps R]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string what = argv[1];
  Options opt;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--portable") {
      opt.portable = true;
    } else if (a == "--a-transposed") {
      opt.a_transposed = true;
    } else if (a == "--target" && i + 1 < argc) {
      if (!force_target(argv[++i])) {
        std::fprintf(stderr, "kernels_bench: no target %s on this CPU\n", argv[i]);
        return 2;
      }
    } else if ((a == "--threads" || a == "--devices") && i + 1 < argc) {
      opt.threads = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--reps" && i + 1 < argc) {
      opt.reps = std::atoi(argv[++i]);
    } else if (!a.empty() && a[0] != '-') {
      opt.dims.push_back(std::strtoull(a.c_str(), nullptr, 10));
    } else {
      return usage();
    }
  }
  const auto& dm = opt.dims;
  if (dm.size() != (what == "gemm" ? 3u : 4u) || opt.reps < 1 ||
      std::find(dm.begin(), dm.end(), 0u) != dm.end()) {
    return usage();
  }
  std::vector<Work> works;
  double flops = 0;
  if (what == "gemm") {
    const std::size_t threads = opt.threads ? opt.threads : 1;
    for (std::size_t t = 0; t < threads; ++t)
      works.push_back(gemm_work(dm[0], dm[1], dm[2], 7 + 3 * unsigned(t), opt.a_transposed));
    flops = 2.0 * double(dm[0] * dm[1] * dm[2]) * double(threads);
  } else if (what == "tp-mlp") {
    const std::size_t devices = opt.threads ? opt.threads : 8;
    if (dm[2] % devices) return usage();
    for (std::size_t t = 0; t < devices; ++t)
      works.push_back(tp_mlp_work(dm[0], dm[1], dm[2] / devices, dm[3], 7 + 3 * unsigned(t)));
    flops = 2.0 * double(dm[0] * dm[1] * dm[2]) + 2.0 * double(dm[0] * dm[2] * dm[3]);
  } else {
    return usage();
  }
  const Round best = best_round(works, opt.portable, opt.reps);
  std::string dims;
  for (auto x : dm) {
    if (!dims.empty()) dims += 'x';
    dims += std::to_string(x);
  }
  std::printf(
      "%s %s threads=%zu target=%s best_s=%.6f gflops=%.2f cpu_s=%.6f gflops_per_cpu_s=%.2f\n",
      what.c_str(), dims.c_str(), works.size(),
      opt.portable ? "portable(std::fma loop)" : meshrun::gemm_target(), best.wall_s,
      flops / best.wall_s / 1e9, best.cpu_s, flops / best.cpu_s / 1e9);
  return 0;
}
