#include "bench/allreduce_bench.hpp"
#include "bench/bench_method.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <exception>
#include <thread>

#include "collectives/in_process.hpp"
#include "collectives/kernels.hpp"
#include "mesh/mesh.hpp"
#include "support/errors.hpp"

namespace meshrun::bench {

namespace {

const std::string kAxis = "data";

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
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
    case CollectiveOp::kAllReduceMax:
    case CollectiveOp::kAllReduceMin:
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
// The members one call runs over: --groups K, else the whole axis.
int participants(const AllReduceBenchOptions& o) { return o.groups > 0 ? o.groups : o.devices; }

// --groups K as IndexGroups: subgroup s holds s, s + n/K, s + 2n/K, ... (n/K of them of K each).
std::optional<IndexGroups> bench_groups(const AllReduceBenchOptions& o) {
  if (o.groups <= 0) return std::nullopt;
  const int count = o.devices / o.groups;
  std::vector<std::vector<int>> table(static_cast<std::size_t>(count));
  for (int s = 0; s < count; ++s)
    for (int p = 0; p < o.groups; ++p) table[static_cast<std::size_t>(s)].push_back(s + p * count);
  return IndexGroups(std::move(table), o.devices);
}

std::vector<Shape> planned_shapes(const AllReduceBenchOptions& o) {
  std::vector<Shape> shapes;
  for (std::size_t size : kSizes) {
    const Shape s = shape_of(o.op, size, participants(o));
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
  const BenchPrint* print;         // null: quiet
  std::exception_ptr print_error;  // device 0's failed print, rethrown after the run
  BenchResult* result;
  std::vector<std::vector<double>> call_us;  // [device][call]
  std::vector<double> loop_s;                // [device]
  std::vector<std::uint64_t> wrong;          // [device], for the current size
};

class DeviceBench {
 public:
  DeviceBench(Device& dev, Shared& sh)
      : dev_(dev), sh_(sh), r_(dev.index()), n_(sh.n), groups_(bench_groups(*sh.options)) {
    // The members of this device's call, in the order it folds them, and its place there.
    if (groups_) {
      const std::span<const int> sub = groups_->of(r_);
      members_.assign(sub.begin(), sub.end());
      place_ = groups_->position(r_);
    } else {
      for (int r = 0; r < n_; ++r) members_.push_back(r);
      place_ = r_;
    }
  }

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
      // The third: device 0 could not print the last row, so the table ends here.
      float plan[3] = {static_cast<float>(seconds_since(w0) / warm),
                       r_ == 0 ? static_cast<float>(seconds_since(start)) : 0.0f,
                       r_ == 0 && sh_.print_error ? 1.0f : 0.0f};
      dev_.psum_inplace(plan, kAxis);
      if (plan[2] != 0.0f) return;
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
    if (groups_) {
      const CollectiveOp op = sh_.options->op;
      if (op == CollectiveOp::kAllReduceMean) {
        c.grouped(op, *groups_, out_, out_);  // in place, as below
      } else {
        c.grouped(op, *groups_, in_, out_);
      }
      return;
    }
    switch (sh_.options->op) {
      case CollectiveOp::kAllReduce:
        c.all_reduce_sum(in_, out_);
        break;
      case CollectiveOp::kAllReduceMean:
        c.all_reduce_mean(out_, out_);  // in place, the division included
        break;
      case CollectiveOp::kAllReduceMax:
        c.all_reduce_max(in_, out_);
        break;
      case CollectiveOp::kAllReduceMin:
        c.all_reduce_min(in_, out_);
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

  // The sum of element k over this device's members (integer-valued: exact in any order).
  float member_sum(std::size_t k) const {
    if (!groups_) return expected_sum(n_, k);
    float sum = 0.0f;
    for (int r : members_) sum += test_value(r, k);
    return sum;
  }

  std::uint64_t check() const {
    std::uint64_t bad = 0;
    const std::size_t m = out_.size();
    const auto size = static_cast<float>(members_.size());
    switch (sh_.options->op) {
      case CollectiveOp::kAllReduce:
        for (std::size_t k = 0; k < m; ++k) bad += out_[k] != member_sum(k);
        break;
      case CollectiveOp::kAllReduceMean:
        for (std::size_t k = 0; k < m; ++k) bad += out_[k] != member_sum(k) / size;
        break;
      case CollectiveOp::kAllReduceMax:
      case CollectiveOp::kAllReduceMin: {
        const bool max = sh_.options->op == CollectiveOp::kAllReduceMax;
        for (std::size_t k = 0; k < m; ++k) {
          float want = test_value(members_[0], k);
          for (int r : members_)
            want = max ? std::max(want, test_value(r, k)) : std::min(want, test_value(r, k));
          bad += out_[k] != want;
        }
        break;
      }
      case CollectiveOp::kAllGather: {
        const std::size_t b = in_.size();
        for (std::size_t k = 0; k < m; ++k) bad += out_[k] != test_value(members_[k / b], k % b);
        break;
      }
      case CollectiveOp::kReduceScatter: {
        const std::size_t off = static_cast<std::size_t>(place_) * m;
        for (std::size_t k = 0; k < m; ++k) bad += out_[k] != member_sum(off + k);
        break;
      }
      case CollectiveOp::kPermute:
        MESHRUN_CHECK(false, "bench: ppermute is not a benchmarked op");
    }
    return bad;
  }

  void stop(std::size_t bytes, const char* why) {
    sh_.result->stopped = "stopped before " + std::to_string(bytes) + " bytes: " + why;
    if (!sh_.options->json) print("  # " + sh_.result->stopped + "\n");
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
    const bool reduce = o.op == CollectiveOp::kAllReduce || o.op == CollectiveOp::kAllReduceMean ||
                        o.op == CollectiveOp::kAllReduceMax || o.op == CollectiveOp::kAllReduceMin;
    row.bytes = bytes;
    row.elems = s.elems;
    row.iters = iters;
    row.median_us = percentile(per_call, 0.5);
    row.p90_us = percentile(per_call, 0.9);
    row.mean_us = loop * 1e6 / iters;
    row.algbw = static_cast<double>(bytes) / (row.median_us * 1e-6) / 1e9;
    const int k = participants(o);
    row.busbw = row.algbw * (reduce ? 2.0 : 1.0) * static_cast<double>(k - 1) / k;
    // A grouped call takes the staged or the plain direct path (in_process.hpp).
    row.path = in_process_path(s.in * sizeof(float), reduce && !groups_);
    sh_.result->rows.push_back(row);
    if (!o.json) print(table_row(row) + "\n");
    if (o.on_row) o.on_row(sh_.result->rows.size(), planned_sizes(o), row);
  }

  // On device 0. A print that throws (stdout full or closed) must not read as a failure of the
  // device: it is kept, the table ends at the next size, and the error is rethrown after the run.
  void print(const std::string& lines) {
    if (!sh_.print || sh_.print_error) return;
    try {
      (*sh_.print)(lines);
    } catch (...) {
      sh_.print_error = std::current_exception();
    }
  }

  Device& dev_;
  Shared& sh_;
  int r_, n_;
  std::optional<IndexGroups> groups_;  // --groups
  std::vector<int> members_;           // this device's call's members, in fold order
  int place_ = 0;                      // this device's position among them
  std::vector<float> in_, out_;
};

}  // namespace

std::uint64_t BenchResult::wrong() const {
  std::uint64_t w = 0;
  for (const BenchRow& r : rows) w += r.wrong;
  return w;
}

CollectiveOp parse_bench_op(const std::string& name) {
  for (CollectiveOp op :
       {CollectiveOp::kAllReduce, CollectiveOp::kAllReduceMean, CollectiveOp::kAllReduceMax,
        CollectiveOp::kAllReduceMin, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
    if (name == op_name(op)) return op;
  }
  throw InputError("--op", "unknown collective '" + name +
                               "' (one of psum, pmean, pmax, pmin, all_gather, psum_scatter)");
}

std::size_t planned_sizes(const AllReduceBenchOptions& options) {
  return planned_shapes(options).size();
}

void check_size_range(const AllReduceBenchOptions& options) {
  if (options.min_bytes > options.max_bytes)
    throw InputError("--min-bytes", "is larger than --max-bytes");
  if (!planned_shapes(options).empty()) return;
  std::string sizes;
  for (std::size_t size : kSizes)
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(size * sizeof(float));
  throw InputError(
      "--min-bytes",
      std::to_string(options.min_bytes) + " to --max-bytes " + std::to_string(options.max_bytes) +
          " selects none of the table's sizes (" + sizes + " bytes per device" +
          (options.op == CollectiveOp::kAllGather || options.op == CollectiveOp::kReduceScatter
               ? ", each rounded up to --devices elements"
               : "") +
          ")");
}

BenchResult run_allreduce_bench(const AllReduceBenchOptions& options, const BenchPrint& print) {
  if (options.devices < 1) throw InputError("--devices", "must be at least 1");
  if (options.groups < 0 || (options.groups > 0 && options.devices % options.groups != 0)) {
    throw InputError("--groups", std::to_string(options.groups) + " does not divide --devices " +
                                     std::to_string(options.devices));
  }
  check_size_range(options);
  BenchResult result;
  result.participants = participants(options);  // --groups K: K, as busbw counts them
  // The variant names the op and how the engine picks its path: staged up to staged_max_bytes per
  // device (one sync point), direct above (psum: one sync point and a wait for its pieces; the
  // others: two sync points), non-temporal stores for the largest psums.
  result.variant = std::string(op_name(options.op)) +
                   (options.op == CollectiveOp::kAllReduceMean ? "-inplace" : "") +
                   (options.groups > 0 ? "/groups=" + std::to_string(options.groups) : "") +
                   "/staged<=" + std::to_string(GroupOptions{}.staged_max_bytes) + "B+direct";
  Shared sh;
  sh.options = &options;
  sh.n = options.devices;
  sh.print = print ? &print : nullptr;
  sh.result = &result;
  sh.call_us.resize(static_cast<std::size_t>(options.devices));
  sh.loop_s.assign(static_cast<std::size_t>(options.devices), 0.0);
  sh.wrong.assign(static_cast<std::size_t>(options.devices), 0);
  if (print && !options.json) {
    print("# peer=meshrun variant=" + result.variant +
          " participants=" + std::to_string(result.participants) +
          (options.groups > 0 ? " groups=" + std::to_string(options.devices / options.groups) +
                                    "x" + std::to_string(options.groups)
                              : std::string()) +
          "\n" + machine_line() + " pinned=" + (options.pin_devices ? "auto" : "no") + "\n" +
          table_header() + "\n");
  }

  MeshOptions mo;
  mo.timeout = std::chrono::milliseconds(static_cast<long>(options.timeout_s * 1000));
  mo.pin_devices = options.pin_devices;
  Mesh mesh(options.devices, kAxis, mo);
  mesh.run([&sh](Device& dev) { DeviceBench(dev, sh).run(); });
  if (sh.print_error) std::rethrow_exception(sh.print_error);

  if (print && options.json) {
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
    print(j.dump(2) + "\n");
  }
  return result;
}

}  // namespace meshrun::bench
