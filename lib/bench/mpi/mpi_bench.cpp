#include "bench/mpi/mpi_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <ostream>

#include "bench/bench_method.hpp"
#include "io/mpi/mpi_shard_map.hpp"
#include "mesh/mesh.hpp"
#include "support/errors.hpp"

namespace meshrun::bench {

namespace {

using Clock = std::chrono::steady_clock;

class MpiDeviceBench {
 public:
  MpiDeviceBench(Communicator& c, const AllReduceBenchOptions& o, const MpiOptions& mpi,
                 BenchResult& result, std::ostream* table)
      : c_(c), o_(o), mpi_(mpi), result_(result), table_(table), g_(c.rank()), n_(c.size()) {}

  void run() {
    const auto start = Clock::now();
    for (std::size_t size : kSizes) {
      const std::size_t bytes = size * sizeof(float);
      if (bytes < o_.min_bytes || bytes > o_.max_bytes) continue;
      in_.resize(size);
      for (std::size_t k = 0; k < size; ++k) in_[k] = test_value(g_, k);
      out_.assign(size, std::numeric_limits<float>::quiet_NaN());
      c_.all_reduce_sum(in_, out_);  // correctness first
      float wrong = check();

      const int warm = warmup_iters(bytes);
      const auto w0 = Clock::now();
      for (int i = 0; i < warm; ++i) c_.all_reduce_sum(in_, out_);
      // Every device must plan the same loop: agree through a psum (same bits everywhere).
      float plan[2] = {static_cast<float>(seconds(w0) / warm),
                       g_ == 0 ? static_cast<float>(seconds(start)) : 0.0f};
      c_.all_reduce_sum(plan, plan);
      const int iters =
          plan_iters(plan[0] / static_cast<float>(n_), bytes, o_, o_.total_budget_s - plan[1]);
      if (iters == 0) {
        if (g_ == 0) stop(bytes);
        return;
      }
      // times[i] = this device's call i; the last two entries: wrong count, loop seconds.
      std::vector<float> times(static_cast<std::size_t>(iters) + 1);
      const auto t0 = Clock::now();
      auto prev = t0;
      for (int i = 0; i < iters; ++i) {
        c_.all_reduce_sum(in_, out_);
        const auto now = Clock::now();
        times[static_cast<std::size_t>(i)] =
            static_cast<float>(std::chrono::duration<double, std::micro>(now - prev).count());
        prev = now;
      }
      const auto loop = static_cast<float>(std::chrono::duration<double>(prev - t0).count());
      std::fill(out_.begin(), out_.end(), std::numeric_limits<float>::quiet_NaN());
      c_.all_reduce_sum(in_, out_);  // again, on fresh outputs
      wrong += check();
      times.back() = wrong;
      c_.all_reduce_sum(times, times);  // sums over the n devices
      std::vector<float> loops(static_cast<std::size_t>(n_));
      c_.all_gather(std::span<const float>(&loop, 1), loops);
      if (g_ == 0) row(size, bytes, times, *std::max_element(loops.begin(), loops.end()));
    }
  }

 private:
  static double seconds(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }

  float check() const {
    float bad = 0;
    for (std::size_t k = 0; k < out_.size(); ++k)
      bad += out_[k] != expected_sum(n_, k) ? 1.0f : 0.0f;
    return bad;
  }

  void stop(std::size_t bytes) {
    result_.stopped =
        "stopped before " + std::to_string(bytes) + " bytes: would exceed the total time budget";
    if (table_) *table_ << "  # " << result_.stopped << std::endl;
  }

  void row(std::size_t size, std::size_t bytes, const std::vector<float>& sums, float loop_s) {
    const int iters = static_cast<int>(sums.size()) - 1;
    std::vector<double> per_call(static_cast<std::size_t>(iters));
    for (std::size_t i = 0; i < per_call.size(); ++i)
      per_call[i] = static_cast<double>(sums[i]) / n_;
    BenchRow r;
    r.bytes = bytes;
    r.elems = size;
    r.iters = iters;
    r.median_us = percentile(per_call, 0.5);
    r.p90_us = percentile(per_call, 0.9);
    r.mean_us = loop_s * 1e6 / iters;
    r.algbw = static_cast<double>(bytes) / (r.median_us * 1e-6) / 1e9;
    r.busbw = r.algbw * 2.0 * (n_ - 1) / n_;
    r.wrong = static_cast<std::uint64_t>(sums.back());
    r.path = bytes <= mpi_.gather_max_bytes ? "gather" : "chain";
    result_.rows.push_back(r);
    if (table_) *table_ << table_row(r) << std::endl;
  }

  Communicator& c_;
  const AllReduceBenchOptions& o_;
  const MpiOptions& mpi_;
  BenchResult& result_;
  std::ostream* table_;  // non-null on the device that prints
  int g_, n_;
  std::vector<float> in_, out_;
};

}  // namespace

BenchResult run_mpi_allreduce_bench(MpiJob& job, const AllReduceBenchOptions& options,
                                    const MpiOptions& mpi, std::ostream* out) {
  const int ranks = job.ranks();
  if (options.devices < 1 || options.devices % ranks != 0)
    throw InputError("--devices", std::to_string(options.devices) +
                                      " devices cannot be split over " + std::to_string(ranks) +
                                      " ranks");
  const int k = options.devices / ranks;
  BenchResult result;
  result.participants = options.devices;
  result.variant = "psum/ranks=" + std::to_string(ranks) + "x" + std::to_string(k) +
                   "/gather<=" + std::to_string(mpi.gather_max_bytes) + "B+chain" +
                   std::to_string(mpi.chunk_bytes / 1024) + "KiB";
  std::ostream* printer = job.rank() == 0 ? out : nullptr;
  if (printer) {
    *printer << "# peer=meshrun-mpi variant=" << result.variant
             << " participants=" << options.devices << "\n"
             << machine_line() << "\n"
             << table_header() << std::endl;
  }
  // The devices as a program's: a shard_map of no inputs and no outputs (mpi_shard_map.hpp).
  const Body body = [&](Device& device, std::vector<Tensor>&) {
    Communicator& c = device.comm();
    MpiDeviceBench(c, options, mpi, result, c.rank() == 0 ? printer : nullptr).run();
    return std::vector<Tensor>{};
  };
  MeshOptions mesh;
  mesh.timeout = mpi.timeout;
  mpi_shard_map(job, {{"data", options.devices}}, body, {}, {}, {}, mesh, nullptr, false, mpi);
  return result;
}

}  // namespace meshrun::bench
