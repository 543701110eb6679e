// The all-reduce benchmark across MPI ranks: `meshrun bench allreduce`'s method and table
// (bench/bench_method.hpp) for a mesh of `devices` spread over the job's R ranks, k = devices / R
// threads each, timing psum. Every device times every call; the per-call value is the mean over
// all n devices and the loop time the slowest device's, gathered with the backend's own
// collectives; rank 0 prints. The `path` column says which protocol the size takes ("gather" or
// "chain", see mpi_group.hpp).
//
// The devices run as a shard_map of no inputs and no outputs over the job's ranks
// (io/mpi/mpi_shard_map.hpp), so a failure ends as a program's does: every wait bounded by the
// timeout, the first cause on rank 0, and a rank that stopped answering named (with its host,
// once the caller has set_rank_hosts) as a CollectiveError with job.broken() set.
#pragma once

#include <iosfwd>

#include "bench/allreduce_bench.hpp"
#include "collectives/mpi/mpi_group.hpp"
#include "io/mpi/mpi_job.hpp"

namespace meshrun::bench {

// Collective over the job's ranks; `out` matters on rank 0 only, and the result's rows are rank
// 0's. Throws InputError when R does not divide options.devices, and CollectiveError when a
// collective fails or a rank stops answering; wrong results are counted, not thrown.
BenchResult run_mpi_allreduce_bench(MpiJob& job, const AllReduceBenchOptions& options,
                                    const MpiOptions& mpi, std::ostream* out);

}  // namespace meshrun::bench
