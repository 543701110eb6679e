#include "bench/allreduce_bench.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "collectives/in_process.hpp"
#include "collectives/kernels.hpp"
#include "mesh/mesh.hpp"
#include "support/errors.hpp"

namespace meshrun::bench {

namespace {

// The peers' sizes in floats (common.hpp kSizes).
constexpr std::size_t kSizes[] = {1,          8,        64,       1u << 10, 16u << 10,
                                  256u << 10, 1u << 20, 4u << 20, 16u << 20};
const std::string kAxis = "data";

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// common.hpp: warm-up calls and the cap on timed calls, by size.
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
// common.hpp plan_iters: 0 means "skip, it would pass the total budget".
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

// Integer-valued test data (common.hpp), so every summation order gives the exact sum.
float test_value(int rank, std::size_t k) {
  return static_cast<float>(rank + 1) + static_cast<float>(k % 7);
}
float expected_sum(int n, std::size_t k) {
  return static_cast<float>(n * (n + 1) / 2) + static_cast<float>(n) * static_cast<float>(k % 7);
}

// Buffer sizes of one call: `elems` is the table's size (per device for psum/pmean, the whole
// gathered/scattered buffer for all_gather/psum_scatter, rounded up to a multiple of n).
struct Shape {
  std::size_t elems, in, out;
};
Shape shape_of(CollectiveOp op, std::size_t size, int n) {
  const auto un = static_cast<std::size_t>(n);
  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kAllReduceMean:
    case CollectiveOp::kPermute:  // not offered by parse_bench_op
      return {size, size, size};
    case CollectiveOp::kAllGather: {
      const std::size_t m = std::max<std::size_t>(1, size / un);
      return {m * un, m, m * un};
    }
    case CollectiveOp::kReduceScatter: {
      const std::size_t m = std::max<std::size_t>(1, size / un);
      return {m * un, m * un, m};
    }
  }
  return {size, size, size};
}

// The sizes the table times: the peers' sizes within [min_bytes, max_bytes], each once
// (all_gather and psum_scatter round the smallest sizes up to n elements).
std::vector<Shape> planned_shapes(const AllReduceBenchOptions& o) {
  std::vector<Shape> shapes;
  for (std::size_t size : kSizes) {
    const Shape s = shape_of(o.op, size, o.devices);
    const std::size_t bytes = s.elems * sizeof(float);
    if (bytes < o.min_bytes || bytes > o.max_bytes) continue;
    if (!shapes.empty() && shapes.back().elems == s.elems) continue;
    shapes.push_back(s);
  }
  return shapes;
}

// What the table's rows share between the device threads. Each device writes only its own
// entries; device 0 reads them after a psum that every device entered after writing (the
// collective's synchronisation orders the writes before the reads).
struct Shared {
  const AllReduceBenchOptions* options;
  int n;
  std::ostream* out;
  BenchResult* result;
  std::vector<std::vector<double>> call_us;  // [device][call]
  std::vector<double> loop_s;                // [device]
  std::vector<std::uint64_t> wrong;          // [device], for the current size
};

class DeviceBench {
 public:
  DeviceBench(Device& dev, Shared& sh) : dev_(dev), sh_(sh), r_(dev.index()), n_(sh.n) {}

  void run() {
    const AllReduceBenchOptions& o = *sh_.options;
    const auto start = Clock::now();
    for (const Shape& s : planned_shapes(o)) {
      const std::size_t bytes = s.elems * sizeof(float);
      in_.assign(s.in, 0.0f);
      out_.assign(s.out, std::numeric_limits<float>::quiet_NaN());
      for (std::size_t k = 0; k < s.in; ++k) in_[k] = test_value(r_, k);
      if (o.op == CollectiveOp::kAllReduceMean) out_ = in_;  // pmean runs in place on out_

      // Correctness first: one call, every element checked on every device.
      call();
      std::uint64_t wrong = check();

      const int warm = warmup_iters(bytes);
      const auto w0 = Clock::now();
      for (int i = 0; i < warm; ++i) call();
      // Every device must plan the same loop: agree on the numbers through a psum (its result
      // has the same bits on every device).
      float plan[2] = {static_cast<float>(seconds_since(w0) / warm),
                       r_ == 0 ? static_cast<float>(seconds_since(start)) : 0.0f};
      dev_.psum_inplace(plan, kAxis);
      const double per_call = plan[0] / static_cast<float>(n_);
      const int iters = plan_iters(per_call, bytes, o, o.total_budget_s - plan[1]);
      if (iters == 0) {
        if (r_ == 0) stop(bytes, "would exceed the total time budget");
        return;
      }

      std::vector<double>& times = sh_.call_us[static_cast<std::size_t>(r_)];
      times.assign(static_cast<std::size_t>(iters), 0.0);
      const auto t0 = Clock::now();
      auto prev = t0;
      for (int i = 0; i < iters; ++i) {
        call();
        const auto now = Clock::now();
        times[static_cast<std::size_t>(i)] =
            std::chrono::duration<double, std::micro>(now - prev).count();
        prev = now;
      }
      sh_.loop_s[static_cast<std::size_t>(r_)] = std::chrono::duration<double>(prev - t0).count();
      // Again after the back-to-back calls, on fresh outputs (an out-of-place call that wrote
      // nothing would otherwise pass on the previous call's results).
      if (o.op == CollectiveOp::kAllReduceMean) {
        out_ = in_;
      } else {
        std::fill(out_.begin(), out_.end(), std::numeric_limits<float>::quiet_NaN());
      }
      call();
      wrong += check();
      sh_.wrong[static_cast<std::size_t>(r_)] = wrong;

      float barrier[1] = {0.0f};
      dev_.psum_inplace(barrier, kAxis);  // every device's times and counts are written
      if (r_ == 0) row(s, bytes, iters);
    }
  }

 private:
  void call() {
    Communicator& c = dev_.comm();
    switch (sh_.options->op) {
      case CollectiveOp::kAllReduce:
        c.all_reduce_sum(in_, out_);
        break;
      case CollectiveOp::kAllReduceMean:
        c.all_reduce_mean(out_, out_);  // in place, the division included
        break;
      case CollectiveOp::kAllGather:
        c.all_gather(in_, out_);
        break;
      case CollectiveOp::kReduceScatter:
        c.reduce_scatter_sum(in_, out_);
        break;
      case CollectiveOp::kPermute:
        MESHRUN_CHECK(false, "bench: ppermute is not a benchmarked op");
    }
  }

  std::uint64_t check() const {
    std::uint64_t bad = 0;
    const std::size_t m = out_.size();
    switch (sh_.options->op) {
      case CollectiveOp::kAllReduce:
        for (std::size_t k = 0; k < m; ++k) bad += out_[k] != expected_sum(n_, k);
        break;
      case CollectiveOp::kAllReduceMean:
        for (std::size_t k = 0; k < m; ++k)
          bad += out_[k] != expected_sum(n_, k) / static_cast<float>(n_);
        break;
      case CollectiveOp::kAllGather: {
        const std::size_t b = in_.size();
        for (std::size_t k = 0; k < m; ++k)
          bad += out_[k] != test_value(static_cast<int>(k / b), k % b);
        break;
      }
      case CollectiveOp::kReduceScatter: {
        const std::size_t off = static_cast<std::size_t>(r_) * m;
        for (std::size_t k = 0; k < m; ++k) bad += out_[k] != expected_sum(n_, off + k);
        break;
      }
      case CollectiveOp::kPermute:
        MESHRUN_CHECK(false, "bench: ppermute is not a benchmarked op");
    }
    return bad;
  }

  void stop(std::size_t bytes, const char* why) {
    sh_.result->stopped = "stopped before " + std::to_string(bytes) + " bytes: " + why;
    if (sh_.out && !sh_.options->json) *sh_.out << "  # " << sh_.result->stopped << std::endl;
  }

  void row(const Shape& s, std::size_t bytes, int iters) {
    const auto n = static_cast<std::size_t>(n_);
    std::vector<double> per_call(static_cast<std::size_t>(iters), 0.0);
    double loop = 0;
    BenchRow row;
    for (std::size_t d = 0; d < n; ++d) {
      for (std::size_t i = 0; i < per_call.size(); ++i)
        per_call[i] += sh_.call_us[d][i] / static_cast<double>(n);
      loop = std::max(loop, sh_.loop_s[d]);
      row.wrong += sh_.wrong[d];
    }
    const AllReduceBenchOptions& o = *sh_.options;
    const bool reduce = o.op == CollectiveOp::kAllReduce || o.op == CollectiveOp::kAllReduceMean;
    row.bytes = bytes;
    row.elems = s.elems;
    row.iters = iters;
    row.median_us = percentile(per_call, 0.5);
    row.p90_us = percentile(per_call, 0.9);
    row.mean_us = loop * 1e6 / iters;
    row.algbw = static_cast<double>(bytes) / (row.median_us * 1e-6) / 1e9;
    row.busbw = row.algbw * (reduce ? 2.0 : 1.0) * static_cast<double>(n_ - 1) / n_;
    row.path =
        in_process_path(s.in * sizeof(float), o.op == CollectiveOp::kAllReduce || o.op == CollectiveOp::kAllReduceMean);
    sh_.result->rows.push_back(row);
    if (sh_.out && !o.json) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "  %10zu %9zu %6d %11.2f %11.2f %11.2f %11.4f %11.4f %6llu  %s", row.bytes,
                    row.elems, row.iters, row.median_us, row.mean_us, row.p90_us, row.algbw,
                    row.busbw, static_cast<unsigned long long>(row.wrong), row.path.c_str());
      *sh_.out << line << std::endl;
    }
    if (o.on_row) o.on_row(sh_.result->rows.size(), planned_sizes(o), row);
  }

  Device& dev_;
  Shared& sh_;
  int r_, n_;
  std::vector<float> in_, out_;
};

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

}  // namespace

std::uint64_t BenchResult::wrong() const {
  std::uint64_t w = 0;
  for (const BenchRow& r : rows) w += r.wrong;
  return w;
}

CollectiveOp parse_bench_op(const std::string& name) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllReduceMean,
                          CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
    if (name == op_name(op)) return op;
  }
  throw InputError(
      "--op", "unknown collective '" + name + "' (one of psum, pmean, all_gather, psum_scatter)");
}

std::size_t planned_sizes(const AllReduceBenchOptions& options) {
  return planned_shapes(options).size();
}

BenchResult run_allreduce_bench(const AllReduceBenchOptions& options, std::ostream* out) {
  if (options.devices < 1) throw InputError("--devices", "must be at least 1");
  if (options.min_bytes > options.max_bytes)
    throw InputError("--min-bytes", "is larger than --max-bytes");
  BenchResult result;
  result.participants = options.devices;
  // The variant names the op and how the engine picks its path: staged up to staged_max_bytes per
  // device (one sync point), direct above (two), non-temporal stores for the largest psums.
  result.variant = std::string(op_name(options.op)) +
                   (options.op == CollectiveOp::kAllReduceMean ? "-inplace" : "") +
                   "/staged<=" + std::to_string(GroupOptions{}.staged_max_bytes) + "B+direct";
  Shared sh;
  sh.options = &options;
  sh.n = options.devices;
  sh.out = out;
  sh.result = &result;
  sh.call_us.resize(static_cast<std::size_t>(options.devices));
  sh.loop_s.assign(static_cast<std::size_t>(options.devices), 0.0);
  sh.wrong.assign(static_cast<std::size_t>(options.devices), 0);
  if (out && !options.json) {
    *out << "# peer=meshrun variant=" << result.variant << " participants=" << options.devices
         << "\n"
         << machine_line() << " pinned=" << (options.pin_devices ? "auto" : "no") << "\n";
    char line[256];
    std::snprintf(line, sizeof line, "# %10s %9s %6s %11s %11s %11s %11s %11s %6s  %s", "bytes",
                  "elems", "iters", "median_us", "mean_us", "p90_us", "algbw_GB/s", "busbw_GB/s",
                  "wrong", "path");
    *out << line << std::endl;
  }

  MeshOptions mo;
  mo.timeout = std::chrono::milliseconds(static_cast<long>(options.timeout_s * 1000));
  mo.pin_devices = options.pin_devices;
  Mesh mesh(options.devices, kAxis, mo);
  mesh.run([&sh](Device& dev) { DeviceBench(dev, sh).run(); });

  if (out && options.json) {
    nlohmann::ordered_json j;
    j["peer"] = "meshrun";
    j["variant"] = result.variant;
    j["participants"] = result.participants;
    j["machine"] = machine_line().substr(11);
    j["pinned"] = options.pin_devices;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const BenchRow& r : result.rows) {
      rows.push_back({{"bytes", r.bytes},
                      {"elems", r.elems},
                      {"iters", r.iters},
                      {"median_us", r.median_us},
                      {"mean_us", r.mean_us},
                      {"p90_us", r.p90_us},
                      {"algbw_GBps", r.algbw},
                      {"busbw_GBps", r.busbw},
                      {"wrong", r.wrong},
                      {"path", r.path}});
    }
    j["rows"] = rows;
    if (!result.stopped.empty()) j["stopped"] = result.stopped;
    j["wrong"] = result.wrong();
    *out << j.dump(2) << std::endl;
  }
  return result;
}

}  // namespace meshrun::bench
