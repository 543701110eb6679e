// The messages of an MPI job outside the collectives: rank 0 hands each rank its devices' blocks,
// gathers their outputs and tells every rank the exit code. Point to point on a communicator of
// its own, every wait bounded (MPI_Test in a yield-then-sleep loop, as in mpi_group.hpp: a rank
// must not hold a core its peers need), so a dead or stuck peer is an error, never a hang.
// Every rank goes through the same steps in the same order, so one tag suffices: MPI keeps the
// order of messages between two ranks on one communicator. Each message carries its Step all the
// same (as its MPI tag), and a wait for one step whose next message from that rank is of another
// step fails at once, naming both, instead of reading it as its own: an InternalError, the job
// marked broken (it ends by give_up's MPI_Abort, mpi_command.hpp), never an exit code read out of a
// block of inputs.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "shard/mesh_shape.hpp"
#include "support/errors.hpp"
#include "tensor/tensor.hpp"

namespace meshrun {

// The steps of a job, in the order a run meets them (job_messages.hpp's types and
// mpi_shard_map.hpp say what each carries).
enum class Step : std::uint64_t {
  kLaunch = 1,  // every rank -> 0: its command words and host (LaunchMessage, check_launch)
  kSetup,       // 0 -> every rank: the exit code or the run's setup (SetupMessage, share_setup)
  kStart,    // 0 -> every rank: the shard_map's key, {alive} or a code (StartMessage, RootEngine)
  kBlocks,   // 0 -> rank r: its devices' input blocks (mpi_shard_map)
  kOutcome,  // every rank -> 0: how its devices ended and their outputs, or that it could not
             // build its groups (mpi_shard_map)
  kEnd,      // 0 -> every rank: the job's exit code, or {alive} (EndMessage, run_on_job)
};
const char* step_name(Step step);

// What a wait for another step throws when rank 0's next message is already the job's end
// (Step::kEnd): rank 0 ended the job -- it failed before this step, and said why -- and `bytes`
// is that message, which the wait has taken (run_on_job ends with its code, no second wait).
class JobEnded : public Error {
 public:
  explicit JobEnded(std::string bytes) : Error("rank 0 ended the job"), bytes_(std::move(bytes)) {}
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class MpiJob {
 public:
  // Collective over MPI_COMM_WORLD (MPI initialised). `bound`: how long any one wait may take.
  explicit MpiJob(std::chrono::milliseconds bound);
  ~MpiJob();
  MpiJob(const MpiJob&) = delete;
  MpiJob& operator=(const MpiJob&) = delete;

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  // True once a wait timed out (a peer may be dead, so MPI_Finalize could wait for it forever) or
  // a peer's message was of another step than the one waited for.
  bool broken() const { return broken_; }

  // A rank that reports a failure the job cannot end in order (a peer stopped answering) tells
  // every other rank first (a note not waited for beyond a moment: a peer may be dead). A rank
  // about to report finds an earlier note with reported_elsewhere() and stays quiet -- a later
  // giver-up, or a stopped rank continued by the kill that follows: one line, the first's.
  void tell_reported();
  bool reported_elsewhere();

  // Each wait is bounded by `bound` (0: the job's). A message of another step than the one waited
  // for is an InternalError naming both, and broken() from then on.
  using ms = std::chrono::milliseconds;
  void send(int to, Step step, const std::string& bytes, ms bound = ms{0});
  std::string recv(int from, Step step, ms bound = ms{0});
  // Rank 0's `bytes` to every rank; returns them on every rank (the others' argument is unused).
  std::string from_root(Step step, const std::string& bytes, ms bound = ms{0});
  // Every rank's `bytes` to rank 0: on rank 0 all of them in rank order, elsewhere {}. Rank 0
  // takes them as they come, under one deadline; its TimeoutError names (and its missing() holds)
  // every rank that had not sent by then.
  std::vector<std::string> to_root(Step step, const std::string& bytes, ms bound = ms{0});

 private:
  using Clock = std::chrono::steady_clock;
  void wait(MPI_Request& req, const char* what, int peer, ms bound);
  // Takes the next message from `from` if one has arrived (its bytes by `deadline`), which must
  // be of `step`; `bytes` without the step.
  bool take(int from, Step step, std::string& bytes, Clock::time_point deadline);
  static void pause(int tries);  // between tests: yield at first, then sleep
  [[noreturn]] void timed_out(const std::string& what, std::vector<int> peers, ms bound);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, ranks_ = 1;
  std::chrono::milliseconds bound_;
  bool broken_ = false;
};

// A byte string built and read in the same order on both sides (same machine type on every rank:
// OpenMPI's MPI_BYTE carries no conversion).
class Wire {
 public:
  Wire() = default;
  explicit Wire(std::string bytes) : bytes_(std::move(bytes)) {}
  const std::string& bytes() const { return bytes_; }

  void put(std::uint64_t v);
  void put(const std::string& s);
  void put(const Shape& s);
  void put(const Tensor& t);
  void put(const MeshShape& m);
  std::uint64_t u64();
  std::string str();
  Shape shape();
  Tensor tensor();
  MeshShape mesh();

 private:
  void raw(const void* p, std::size_t n) { bytes_.append(static_cast<const char*>(p), n); }
  void take(void* p, std::size_t n);
  std::string bytes_;
  std::size_t at_ = 0;
};

}  // namespace meshrun
