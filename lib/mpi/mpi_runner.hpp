// Running one rank's share of an MPI mesh: its k device threads, and what a program does when a
// collective failed. The MPI tests and meshrun_mpi_bench run their bodies with it; the programs
// run through mpi_shard_map.hpp (which builds a Device per thread) and use the rest.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "mpi/mpi_group.hpp"
#include "support/errors.hpp"

namespace meshrun {

// MPI_Init_thread with MPI_THREAD_MULTIPLE; throws InternalError if the library cannot provide it.
void init_mpi_threads(int* argc, char*** argv);

// Runs body(member j) on one std::jthread per local device, waits for all of them and returns each
// device's exception (null where the body returned). A body that throws aborts the group with
// "device D (rank r) failed after <op> #<seq> on '<axis>': <what>", which every rank then
// reports, unless the group had already failed for another reason (the first one wins).
std::vector<std::exception_ptr> run_local_devices(
    MpiGroup& group, const std::function<void(MpiCommunicator&)>& body);

// The error to report for a run: the first that is not a consequence (AbortedError) of another,
// else the first; null when every device returned.
std::exception_ptr first_cause(const std::vector<std::exception_ptr>& errors);

// The line for a wait on other ranks of an MpiJob that timed out (`e.missing()`: the ranks that
// never answered, which stopped, died or hang): "rank 2 stopped answering (stopped, killed or
// hung): <e>", then "; the run had failed: <failure>" when `failure` is not empty. With the ranks'
// machines known (set_rank_hosts), " on host node3" follows "stopped answering".
std::string stopped_answering(const TimeoutError& e, const std::string& failure);

// Each rank's machine (MPI_Get_processor_name, gathered by the caller), for the lines that name
// lost ranks; hosts_of({2, 3}): "host node2" or "hosts node2, node3" (each once, in rank order),
// "" when unknown.
void set_rank_hosts(std::vector<std::string> hosts);
std::string hosts_of(const std::vector<int>& ranks);

// Last resort, when a peer may be dead and MPI_Finalize could wait for it forever: prints
// "meshrun: rank R: <message>" on stderr and ends the whole job with MPI_Abort(code).
[[noreturn]] void abort_job(const std::string& message, int code);

}  // namespace meshrun
