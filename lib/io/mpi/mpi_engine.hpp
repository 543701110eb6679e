// A program's run over an MPI job's ranks: rank 0 runs the program (programs/program.hpp's
// Computation) on the global arrays with a RootEngine, which hands the one shard_map it reaches to
// every rank; the others run_share it. Between share_setup and run_on_job's end
// (mpi_command.hpp).
//
// PROTOCOL (StartMessage, job_messages.hpp): rank 0 -> all {alive} every 5 s while it evaluates
// what a program file computes before its shard_map, then {key} as the shard_map starts (the key
// names the call: Computation::call), and the mesh runs the call over the ranks (mpi_shard_map);
// {key ""} when the run ended without a shard_map, or {code} when it failed before one (the others
// then end with that code). After the shard_map the others go on to the job's end and wait there
// (run_on_job), rank 0 sending EndMessage{alive} every 5 s while it computes after the shard_map
// and grades: each of their waits, bounded by the job's bound, sees it alive, and a stopped rank 0
// is still found within the bound.
#pragma once

#include <optional>
#include <thread>
#include <vector>

#include "io/mpi/mpi_job.hpp"
#include "io/mpi/mpi_shard_map.hpp"
#include "mesh/mesh.hpp"
#include "mesh/shard_map.hpp"
#include "programs/program.hpp"

namespace meshrun {

// Sends rank 0's {alive} of `step` (kStart or kEnd) every 5 s from a thread of its own until
// stopped; stop() joins it before rank 0 sends anything else, so the messages keep their order.
class Keepalive {
 public:
  Keepalive(MpiJob& job, Step step);
  void stop();
  ~Keepalive() { stop(); }

 private:
  std::jthread thread_;
};

// Rank 0's engine (a program runs at most one shard_map under mpirun: a second is an
// InternalError, refused at setup by Computation::shard_maps).
class RootEngine final : public Engine {
 public:
  RootEngine(MpiJob& job, const MeshShape& mesh, const MeshOptions& options, Trace& trace,
             bool profiling);

  const MeshShape& shape() const override { return mesh_; }
  std::vector<Tensor> shard_map(const ShardMapCall& call,
                                const std::vector<TensorRef>& global) override;

  // The run failed with `code`: before its shard_map, the others still wait for it and end with
  // this code instead.
  void failed(int code);
  // The run ended. Without a shard_map, the others are done (they wait at the job's end while
  // this rank grades). Returns what the shard_map left: the injections that never fired, and each
  // device's count of collectives.
  const MpiShardMapResult& ended();

 private:
  MpiJob& job_;
  const MeshShape mesh_;
  const MeshOptions& options_;
  Trace& trace_;
  const bool profiling_;
  Keepalive keepalive_{job_, Step::kStart};
  std::optional<Keepalive> after_;  // from the shard_map's end: what follows it, and the grading
  bool started_ = false;
  MpiShardMapResult result_;
};

// A rank other than 0: waits for rank 0's run to reach its shard_map and runs its own devices'
// share of the call rank 0 names; returns when the run reached none, ExitWith(code) when it
// failed before one.
void run_share(MpiJob& job, const ProgramDef& program, const MeshShape& mesh,
               const MeshOptions& options, bool profiling);

}  // namespace meshrun
