// The all-reduce benchmark across MPI ranks: `meshrun bench allreduce`'s method and table
// (bench/bench_method.hpp) for a mesh of `devices` spread over the job's R ranks, k = devices / R
// threads each, timing psum. Every device times every call; the per-call value is the mean over
// all n devices and the loop time the slowest device's, gathered with the backend's own
// collectives; rank 0 prints. The `path` column says which protocol the size takes ("gather" or
// "chain", see mpi_group.hpp).
#pragma once

#include <iosfwd>

#include "bench/allreduce_bench.hpp"
#include "collectives/mpi/mpi_group.hpp"

namespace meshrun::bench {

// Collective over MPI_COMM_WORLD. Throws InputError when R does not divide options.devices, and
// CollectiveError/TimeoutError when a collective fails; wrong results are counted, not thrown.
BenchResult run_mpi_allreduce_bench(const AllReduceBenchOptions& options, const MpiOptions& mpi,
                                    std::ostream* out);

}  // namespace meshrun::bench
