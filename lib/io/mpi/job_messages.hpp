// The messages of a command across an MPI job's ranks outside its shard_map, one type per step
// (mpi_job.hpp's Step), each read back as it was written: the launch check, the setup, the
// shard_map's start and the job's end. mpi_command.hpp and mpi_engine.hpp say when each is sent;
// the shard_map's own steps (kBlocks, kOutcome) are mpi_shard_map.hpp's.
#pragma once

#include <string>
#include <vector>

#include "io/mpi/mpi_job.hpp"
#include "shard/mesh_shape.hpp"

namespace meshrun {

// kLaunch, every rank -> 0: the words after "meshrun" on its command line and its host's name.
struct LaunchMessage {
  static constexpr Step kStep = Step::kLaunch;
  std::vector<std::string> words;
  std::string host;
  std::string encode() const;
  static LaunchMessage decode(std::string bytes);
};

// kSetup, 0 -> every rank: `code` != 0 when rank 0 failed before the run (the others end with it
// and say nothing); else every rank's host and the run's mesh (empty for a command without one:
// bench).
struct SetupMessage {
  static constexpr Step kStep = Step::kSetup;
  int code = 0;
  std::vector<std::string> hosts;
  MeshShape mesh;
  std::string encode() const;
  static SetupMessage decode(std::string bytes);
};

// kStart, 0 -> every rank: `alive` while rank 0 evaluates what comes before the shard_map (sent
// every 5 s: mpi_engine.hpp), `code` != 0 when the run failed before it, else the key of the
// shard_map the ranks run (Computation::call), "" when the run reached none.
struct StartMessage {
  static constexpr Step kStep = Step::kStart;
  bool alive = false;
  int code = 0;
  std::string key;
  std::string encode() const;
  static StartMessage decode(std::string bytes);
};

// kEnd, 0 -> every rank: `alive` while rank 0 computes after the shard_map and grades (every 5 s),
// else the job's exit code, which every rank ends with.
struct EndMessage {
  static constexpr Step kStep = Step::kEnd;
  bool alive = false;
  int code = 0;
  std::string encode() const;
  static EndMessage decode(std::string bytes);
};

// The job's from_root and to_root for a typed message (the other ranks' `m` is unused by
// from_root; rank 0 alone gets to_root's messages, in rank order).
template <class M>
M from_root(MpiJob& job, const M& m, MpiJob::ms bound = MpiJob::ms{0}) {
  return M::decode(job.from_root(M::kStep, m.encode(), bound));
}
template <class M>
std::vector<M> to_root(MpiJob& job, const M& m, MpiJob::ms bound = MpiJob::ms{0}) {
  std::vector<M> all;
  for (std::string& bytes : job.to_root(M::kStep, m.encode(), bound))
    all.push_back(M::decode(std::move(bytes)));
  return all;
}

}  // namespace meshrun
