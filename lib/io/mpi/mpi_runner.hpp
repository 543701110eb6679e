// A process of an MPI job: starting MPI for device threads, and what a rank does when a peer may
// be gone. Its devices run in a Mesh (mesh/mesh.hpp) over the job's groups (mpi_mesh.hpp).
#pragma once

#include <string>
#include <vector>

#include "collectives/mpi/mpi_group.hpp"
#include "support/errors.hpp"

namespace meshrun {

// MPI_Init_thread with MPI_THREAD_MULTIPLE; throws InternalError if the library cannot provide it.
void init_mpi_threads(int* argc, char*** argv);

// The line for a wait on other ranks of an MpiJob that timed out (`e.missing()`: the ranks that
// never answered, which stopped, died or hang): "rank 2 stopped answering (stopped, killed or
// hung): <e>", then "; the run had failed: <failure>" when `failure` is not empty. With the ranks'
// machines known (set_rank_hosts), " on host node3" follows "stopped answering".
std::string stopped_answering(const TimeoutError& e, const std::string& failure);

// Each rank's machine (MPI_Get_processor_name, gathered by the caller), for the lines that name
// lost ranks; hosts_of({2, 3}): "host node2" or "hosts node2, node3" (each once, in rank order),
// "" when unknown. Set once, before any run.
void set_rank_hosts(std::vector<std::string> hosts);
const std::vector<std::string>& rank_hosts();
std::string hosts_of(const std::vector<int>& ranks);

// Last resort, when a peer may be dead and MPI_Finalize could wait for it forever: prints
// "meshrun: rank R: <message>" on stderr and ends the whole job with MPI_Abort(code).
[[noreturn]] void abort_job(const std::string& message, int code);

}  // namespace meshrun
