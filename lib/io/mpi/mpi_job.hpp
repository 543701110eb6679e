// The messages of an MPI job outside the collectives: rank 0 hands each rank its devices' blocks,
// gathers their outputs and tells every rank the exit code. Point to point on a communicator of
// its own, every wait bounded (MPI_Test in a yield-then-sleep loop, as in mpi_group.hpp: a rank
// must not hold a core its peers need), so a dead or stuck peer is an error, never a hang.
// Every rank goes through the same steps in the same order, so one tag suffices: MPI keeps the
// order of messages between two ranks on one communicator.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "shard/mesh_shape.hpp"
#include "tensor/tensor.hpp"

namespace meshrun {

class MpiJob {
 public:
  // Collective over MPI_COMM_WORLD (MPI initialised). `bound`: how long any one wait may take.
  explicit MpiJob(std::chrono::milliseconds bound);
  ~MpiJob();
  MpiJob(const MpiJob&) = delete;
  MpiJob& operator=(const MpiJob&) = delete;

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  // True once a wait timed out: a peer may be dead, so MPI_Finalize could wait for it forever.
  bool broken() const { return broken_; }

  // A rank that reports a failure the job cannot end in order (a peer stopped answering) tells
  // every other rank first (a note not waited for beyond a moment: a peer may be dead). A rank
  // about to report finds an earlier note with reported_elsewhere() and stays quiet -- a later
  // giver-up, or a stopped rank continued by the kill that follows: one line, the first's.
  void tell_reported();
  bool reported_elsewhere();

  // Each wait is bounded by `bound` (0: the job's).
  using ms = std::chrono::milliseconds;
  void send(int to, const std::string& bytes, ms bound = ms{0});
  std::string recv(int from, ms bound = ms{0});
  // Rank 0's `bytes` to every rank; returns them on every rank (the others' argument is unused).
  std::string from_root(const std::string& bytes, ms bound = ms{0});
  // Every rank's `bytes` to rank 0: on rank 0 all of them in rank order, elsewhere {}. Rank 0
  // takes them as they come, under one deadline; its TimeoutError names (and its missing() holds)
  // every rank that had not sent by then.
  std::vector<std::string> to_root(const std::string& bytes, ms bound = ms{0});

 private:
  using Clock = std::chrono::steady_clock;
  void wait(MPI_Request& req, const char* what, int peer, ms bound);
  // Takes the next message from `from` if one has arrived (its bytes by `deadline`).
  bool take(int from, std::string& bytes, Clock::time_point deadline);
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
