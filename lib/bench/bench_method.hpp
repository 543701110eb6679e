// The method and the table the all-reduce benchmarks share -- ../shared/peers/common.hpp's, so
// their rows compare with the peers': `meshrun bench allreduce` (allreduce_bench.cpp, devices as
// threads of one process) and meshrun_mpi_bench (lib/mpi/mpi_bench.cpp, R ranks x k threads).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bench/allreduce_bench.hpp"

namespace meshrun::bench {

// The peers' sizes in floats (common.hpp kSizes).
inline constexpr std::size_t kSizes[] = {1,          8,        64,       1u << 10, 16u << 10,
                                         256u << 10, 1u << 20, 4u << 20, 16u << 20};

// common.hpp: warm-up calls and the cap on timed calls, by size.
int warmup_iters(std::size_t bytes);
int max_iters(std::size_t bytes);
// common.hpp plan_iters: 0 means "skip, it would pass the total budget".
int plan_iters(double per_call_s, std::size_t bytes, const AllReduceBenchOptions& o,
               double remaining_s);
double percentile(std::vector<double> v, double p);

// Integer-valued test data (common.hpp), so every summation order gives the exact sum.
float test_value(int rank, std::size_t k);
float expected_sum(int n, std::size_t k);

// "# machine: cpu=... build=... kernels=...", the table's column line, and one row.
std::string machine_line();
std::string table_header();
std::string table_row(const BenchRow& row);

}  // namespace meshrun::bench
