#include "bench/bench_method.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "collectives/in_process.hpp"
#include "collectives/kernels.hpp"

namespace meshrun::bench {

int warmup_iters(std::size_t bytes) {
  if (bytes <= 64u << 10) return 20;
  if (bytes <= 4u << 20) return 5;
  return 2;
}
int max_iters(std::size_t bytes) {
  if (bytes <= 64u << 10) return 1000;
  if (bytes <= 4u << 20) return 200;
  return 40;
}
int plan_iters(double per_call_s, std::size_t bytes, const AllReduceBenchOptions& o,
               double remaining_s) {
  per_call_s = std::max(per_call_s, 1e-7);
  if (per_call_s * o.min_iters > remaining_s) return 0;
  long it = static_cast<long>(o.size_budget_s / per_call_s);
  it = std::max<long>(it, o.min_iters);
  it = std::min<long>(it, max_iters(bytes));
  it = std::min<long>(it, static_cast<long>(remaining_s / per_call_s));
  return static_cast<int>(std::max<long>(it, o.min_iters));
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  const double f = pos - static_cast<double>(lo);
  return v[lo] * (1.0 - f) + v[hi] * f;
}

float test_value(int rank, std::size_t k) {
  return static_cast<float>(rank + 1) + static_cast<float>(k % 7);
}
float expected_sum(int n, std::size_t k) {
  const int ranks_sum = n * (n + 1) / 2;  // 1 + 2 + ... + n, exact in int: n (n + 1) is even
  return static_cast<float>(ranks_sum) + static_cast<float>(n) * static_cast<float>(k % 7);
}

std::string machine_line() {
  std::string cpu = "unknown";
  if (FILE* f = std::fopen("/proc/cpuinfo", "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) {
      std::string l = buf;
      if (l.rfind("model name", 0) == 0) {
        cpu = l.substr(l.find(':') + 2);
        while (!cpu.empty() && (cpu.back() == '\n' || cpu.back() == ' ')) cpu.pop_back();
        break;
      }
    }
    std::fclose(f);
  }
  std::string build =
#if defined(NDEBUG)
      "release";
#else
      "debug";
#endif
#if defined(__OPTIMIZE__)
  build += ",optimized";
#endif
  return "# machine: cpu=\"" + cpu +
         "\" hw_threads=" + std::to_string(std::thread::hardware_concurrency()) +
         " build=" + build + " kernels=" + kernels::isa() +
         " staged_max_bytes=" + std::to_string(GroupOptions{}.staged_max_bytes);
}

std::string table_header() {
  char line[256];
  std::snprintf(line, sizeof line, "# %10s %9s %6s %11s %11s %11s %11s %11s %6s  %s", "bytes",
                "elems", "iters", "median_us", "mean_us", "p90_us", "algbw_GB/s", "busbw_GB/s",
                "wrong", "path");
  return line;
}

std::string table_row(const BenchRow& row) {
  char line[256];
  std::snprintf(line, sizeof line, "  %10zu %9zu %6d %11.2f %11.2f %11.2f %11.4f %11.4f %6llu  %s",
                row.bytes, row.elems, row.iters, row.median_us, row.mean_us, row.p90_us, row.algbw,
                row.busbw, static_cast<unsigned long long>(row.wrong), row.path.c_str());
  return line;
}

}  // namespace meshrun::bench
