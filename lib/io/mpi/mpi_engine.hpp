// A program's run over an MPI job's ranks: rank 0 runs the program (programs/program.hpp's
// Computation) on the global arrays with a RootEngine, which hands every shard_map call it reaches
// to every rank, one after the other; the others run_share them. Between share_setup and
// run_on_job's end (mpi_command.hpp).
//
// PROTOCOL (StartMessage, job_messages.hpp), a loop of calls: rank 0 -> all {alive} every 5 s
// while it evaluates what a program file computes outside its shard_maps (before the first call,
// between two calls, after the last), and {key} as a call starts (the key names the call:
// Computation::call; the same key again for a shard_map in a loop); the mesh then runs the call
// over the ranks (mpi_shard_map: kBlocks, the collectives, kOutcome), and the others wait for the
// next {key}. {key ""} when the run ended (after any number of calls, none included), or {code}
// when it failed between calls (the others then end with that code). A failure inside a call
// reaches every rank through the call itself (its outcomes), or, for one only rank 0 sees (an
// output's replicas that differ), through the job's end message, which a wait for a start reads
// as JobEnded. After the end the others go on to the job's end and wait there (run_on_job), rank
// 0 sending EndMessage{alive} every 5 s while it grades: each of their waits, bounded by the
// job's bound, sees it alive, and a stopped rank 0 is still found within the bound.
//
// Each call is a shard_map of its own on every rank, as in one process (a Mesh::run each): its
// --inject counts and its collectives entered start afresh, so the --inject check and the
// profile's device spans are the last call's on both backends (docs/mpi.md); the trace's blocks
// and collectives are every call's, added up from the first (issue #47: every call is graded).
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

// Rank 0's engine: hands each shard_map call to every rank (PROTOCOL above).
class RootEngine final : public Engine {
 public:
  RootEngine(MpiJob& job, const MeshShape& mesh, const MeshOptions& options, Trace& trace,
             bool profiling);

  const MeshShape& shape() const override { return mesh_; }
  std::vector<Tensor> shard_map(const ShardMapCall& call,
                                const std::vector<TensorRef>& global) override;

  // The run failed with `code`: outside a call, the others wait for the next one and end with
  // this code instead (inside one, the call's failure reached them, or the job's end will).
  void failed(int code);
  // The run ended: the others are done with calls (they wait at the job's end while this rank
  // grades). Returns what the last call left (as one process's mesh after its last run): the
  // injections that never fired, and each device's count of collectives; with no call, every
  // injection and none entered.
  const MpiShardMapResult& ended();

 private:
  MpiJob& job_;
  const MeshShape mesh_;
  const MeshOptions& options_;
  Trace& trace_;
  const bool profiling_;
  // {alive} of kStart while this rank evaluates outside the calls, then of kEnd from the end of
  // the run (the grading).
  std::optional<Keepalive> keepalive_;
  bool in_call_ = false;  // a call started and has not returned (its failure is the call's)
  bool called_ = false;   // a call ran
  MpiShardMapResult result_;
};

// A rank other than 0: waits for rank 0's run to reach a shard_map and runs its own devices'
// share of the call rank 0 names, again for every call until rank 0's run ends (returns), or
// fails between calls (ExitWith(code)).
void run_share(MpiJob& job, const ProgramDef& program, const MeshShape& mesh,
               const MeshOptions& options, bool profiling);

}  // namespace meshrun
