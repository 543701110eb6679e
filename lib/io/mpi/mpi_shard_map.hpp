// shard_map across the ranks of an MPI job: one mesh of n devices, rank r hosting devices
// r*k .. r*k+k-1 (k = n / R) as threads, the collectives those of MpiMesh (bit-identical to the
// in-process engine with n devices). Rank 0 holds the global inputs and sends every rank only its
// devices' blocks; each rank runs its devices; rank 0 gathers the output blocks (and each
// device's trace of collectives) and assembles the outputs as shard_map does.
//
// Any number of axes: MpiMesh builds every group (in-process inside a rank, a sub-communicator
// across ranks), all aborted together.
//
// Failures: a device that throws aborts the group with "device D (rank r) failed at <op> #<seq>
// on '<axis>': ...", which reaches every rank; each rank sends its outcome to rank 0, which
// throws the first cause (the lowest rank's that saw one, else a consequence) as the class it
// was (InternalError, else CollectiveError), with the devices stalled by --inject named after a
// timeout. Ranks that send no outcome within the timeout after a failure (stopped or dead) are
// named first instead ("rank 2 stopped answering ..."; stopped_answering, mpi_runner.hpp), as is
// rank 0 on a rank whose outcome it never took -- also when a rank never came to create the
// mesh's groups (a host lost before the first collective). The other ranks throw their own error
// (for the caller to keep quiet).
#pragma once

#include <vector>

#include "mesh/mesh.hpp"
#include "mesh/shard_map.hpp"
#include "collectives/mpi/mpi_group.hpp"
#include "io/mpi/mpi_job.hpp"

namespace meshrun {

struct MpiShardMapResult {
  std::vector<Tensor> outputs;         // rank 0: the global outputs; elsewhere empty
  std::vector<Injection> unfired;      // rank 0: the injections that never fired
  std::vector<std::uint64_t> entered;  // rank 0: collectives entered, per device
};

// Throws InputError when the job's ranks do not divide the mesh's devices (before anything
// runs; rank 0 checks this with check_mpi_mesh first, so every rank agrees). `inputs` matters on
// rank 0 only; `trace` is filled on rank 0, afresh at each call as one process's Mesh::run fills
// it: the call's inputs, outputs and every device's collectives (a failed call's too, each
// device's up to where it stopped). With `profiling` (the same on every rank), every
// device records its spans and rank 0 gathers them into trace->profile (one DeviceProfile per
// device, on rank 0's clock) with its phases split, run and assemble -- also when the run fails,
// before the error is thrown. `protocol`: the MPI groups' paths and chunks (its timeout is
// options.timeout's), which `bench allreduce` tunes.
MpiShardMapResult mpi_shard_map(MpiJob& job, const MeshShape& mesh, const Body& body,
                                const std::vector<ArgDef>& in_specs,
                                const std::vector<ArgDef>& out_specs,
                                const std::vector<TensorRef>& inputs, const MeshOptions& options,
                                Trace* trace, bool profiling = false,
                                const MpiOptions& protocol = {});

// InputError unless a mesh of this shape can run over `ranks` ranks.
void check_mpi_mesh(const MeshShape& mesh, int ranks);

}  // namespace meshrun
