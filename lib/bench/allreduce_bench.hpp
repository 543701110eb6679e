// `meshrun bench allreduce`: times one collective over a mesh of N devices and prints the table of
// ../shared/peers (common.hpp), so the peers' summarize.py reads meshrun's rows beside theirs:
//
//   # peer=meshrun variant=<op>/<path> participants=<N>
//   #  bytes  elems  iters  median_us  mean_us  p90_us  algbw_GB/s  busbw_GB/s  wrong
//
// Method (the peers' one):
//   * sizes: 1, 8, 64, 1Ki, 16Ki, 256Ki, 1Mi, 4Mi, 16Mi floats (4 B to 64 MiB per device), those
//     within [min_bytes, max_bytes];
//   * per size: one call on integer-valued data checked element by element against the serial sum
//     on every device (exact in any order), then warm-up calls (20 / 5 / 2 by size), then `iters`
//     calls back to back, `iters` sized from the warm-up time to about `size_budget_s` seconds;
//     then one more call into poisoned (NaN) outputs, checked again (catches reuse bugs);
//   * every device times every call; the value for call i is the mean over devices; median and p90
//     over calls; mean_us = wall time of the timed loop (slowest device) / iters;
//   * algbw = bytes / median; busbw = algbw * 2(n-1)/n for psum and pmean (nccl-tests), and
//     algbw * (n-1)/n for all_gather and psum_scatter, whose `bytes` is the whole buffer (the
//     gathered output, the scattered input), as in nccl-tests.
//   * wrong = elements that differed from the expected value, over all devices and both checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"

namespace meshrun::bench {

// The collectives the benchmark times: psum, pmean, pmax, pmin, all_gather, psum_scatter
// (op_name's words).
// Throws InputError (naming --op) for anything else.
CollectiveOp parse_bench_op(const std::string& name);

struct BenchRow {
  std::size_t bytes = 0, elems = 0;
  int iters = 0;
  double median_us = 0, mean_us = 0, p90_us = 0, algbw = 0, busbw = 0;
  std::uint64_t wrong = 0;
  std::string path;  // the engine path this size takes ("staged", "direct", "direct-nt")
};

struct AllReduceBenchOptions {
  int devices = 8;
  std::size_t min_bytes = 4;
  std::size_t max_bytes = std::size_t{64} << 20;
  CollectiveOp op = CollectiveOp::kAllReduce;
  // --groups K: the op over axis_index_groups of K devices each, interleaved as JAX's
  // shard_map_test lists them ([[0, n/K, 2n/K, ...], [1, n/K + 1, ...], ...]); 0: the whole axis.
  // The sizes of all_gather and psum_scatter are then rounded to K, and busbw uses K.
  int groups = 0;
  bool json = false;             // one JSON document instead of the table
  double size_budget_s = 1.5;    // timed loop per size, about (run_all.sh gives the peers 1.5)
  double total_budget_s = 90.0;  // the whole table; a size that would pass it is skipped
  int min_iters = 10;
  double timeout_s = 30.0;  // bound on every collective wait
  bool pin_devices = true;  // MeshOptions::pin_devices (--no-pin turns it off)
  // Called on a device thread after each size's row, with the sizes done and planned (the
  // command's progress line); may be empty.
  std::function<void(std::size_t done, std::size_t planned, const BenchRow& row)> on_row;
};

struct BenchResult {
  std::string variant;
  int participants = 0;
  std::vector<BenchRow> rows;
  std::string stopped;  // why the table stopped early, or empty
  std::uint64_t wrong() const;
};

// How many sizes the table plans to time with these options (fewer when the budget runs out).
std::size_t planned_sizes(const AllReduceBenchOptions& options);

// --min-bytes above --max-bytes, or a range holding none of the table's sizes (an empty table
// would be a success that timed nothing): InputError naming --min-bytes.
void check_size_range(const AllReduceBenchOptions& options);

// Where the table goes: called with whole lines, each ending in '\n' (the app's checked stdout).
// It may throw (an OutputError when stdout is full or closed): a throw while the mesh runs ends
// the table at the next size, and run_allreduce_bench rethrows it once the devices are done.
using BenchPrint = std::function<void(const std::string& lines)>;

// Runs the benchmark. With `print` set the table is printed through it row by row as sizes finish
// (or, with options.json, one JSON document at the end). Throws InputError for bad options,
// CollectiveError/DeviceError if the mesh fails, and what `print` threw; wrong results are
// counted, not thrown.
BenchResult run_allreduce_bench(const AllReduceBenchOptions& options, const BenchPrint& print);

}  // namespace meshrun::bench
