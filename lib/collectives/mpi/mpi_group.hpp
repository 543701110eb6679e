// The MPI backend: one group of n devices (a mesh axis, or one group of a tuple of axes on a
// mesh of several) spread over the R ranks of a communicator, rank q hosting some of its members
// as device threads (MpiMembers: member g, its rank in the group, is device device[g] on rank
// owner[g]). The one-axis form: n = R * k, rank r hosting members r*k .. r*k+k-1. Every device
// sees the ordinary Communicator interface; results are bit-identical to the in-process engine
// with the same group, whatever R. Below, "global order" is the order of the group's members.
// Implemented in three files: mpi_group.cpp (the group, its bounded waits and their errors, the
// communicator), mpi_algorithms.cpp (step 2, on the leader: the exchanges across ranks) and
// mpi_abort_channel.cpp (the abort channel and its watcher); mpi_group_detail.hpp holds what
// they share.
//
// PROTOCOL (one call; every device of every rank makes the same calls in the same order)
//
//  1. Publish. Local device j writes its slot (descriptor, in/out pointers, permutation table)
//     and passes the local barrier `arrive_` (a 0-element psum of the in-process engine, used as a
//     black box: a bounded, abortable barrier whose release/acquire publishes the slots).
//  2. The leader (local device 0, the only thread that moves data across ranks) checks that the k
//     descriptors agree and does the whole call for its rank, under one deadline (now + timeout):
//     gather path (all_gather; psum, pmean, pmax, pmin, psum_scatter of at most gather_max_bytes
//     per device):
//       every rank sends [header | its k local inputs] to every other rank in one round of
//       MPI_Isend/MPI_Irecv (not a tree or ring allgather: with 8 ranks on 2 cores each dependent
//       round waits for a process to get a core); every rank checks the R headers (op, count,
//       sequence number, permutation hash), then folds the n inputs in global order 0..n-1 itself
//       (or copies them, for all_gather). One exchange, no chain: the small messages pay one hop,
//       and every rank computes the same left fold, so the same bits.
//     It also carries every psum, pmean, pmax, pmin and psum_scatter of a group whose members
//     are not consecutive runs in rank order (a tuple of axes not in mesh order,
//     ('model','data')): the chain below needs each rank's members to be the next terms of the
//     fold.
//     chain path (larger psum, pmean, pmax, pmin, psum_scatter, members in consecutive runs by
//     rank): the buffer is cut into chunks of chunk_bytes. (Below, "+" and "sum" are pmax's and
//     pmin's fold for them: communicator.hpp's rule, which a running prefix continues alike.)
//       For chunk c, rank 0 folds its devices (v0 + v1) + ... and sends [header | partial] to
//       rank 1; rank r > 0 receives the running prefix P of devices 0..r*k-1 from rank r-1 and
//       folds ((P + v_rk) + v_rk+1) + ... -- exactly the next terms of the global left fold -- and
//       sends on. The last rank's fold is the final sum. Receives are pre-posted `window` chunks
//       ahead and sends overlap the next fold, so after R steps every link is busy at once.
//       psum (pmax, pmin) then broadcasts each final chunk from the last rank (one MPI_Ibcast per
//       chunk, posted by every rank right after it handled that chunk, so the result streams back
//       while later chunks still travel forward; a broadcast copies bits, it does not reorder any
//       sum), and each rank copies every completed chunk to its k outputs. psum_scatter ends with
//       one MPI_Iscatterv of the last rank's sum, each rank's members' blocks to it.
//     grouped (axis_index_groups: Communicator::grouped; psum, pmean, pmax, pmin, all_gather,
//       psum_scatter over subgroups): always the gather path, whatever the size, the header
//       carrying the subgroup size and the groups' table hash (so a rank whose devices pass other
//       groups, or none, is a mismatch); then each rank computes each of its members' results from
//       the gathered inputs of that member's subgroup, folded (concatenated) in the subgroup's
//       listed order -- the in-process engine's fold, so the same bits.
//     ppermute: point to point; member g receives from rank owner[source_of[g]] with tag kPermute +
//     g
//       (MPI keeps the order of messages with the same source, tag and communicator, so calls
//       cannot overtake each other); sources on the same rank are plain copies.
//     MPI only ever reads and writes the group's own buffers (see Buffers), never a device's, so
//     a request left pending by a failed call cannot touch memory its caller has freed.
//  3. Release. Every device passes the local barrier `release_`; pmean divides its own output by
//     n (the same division of the same bits on every device). A device rewrites its slot and
//     buffers only after release_, which completes only once the leader has finished with them.
//  Why bit-identical: the reductions compute, for every element, the left fold over the global
//  device ids 0..n-1 in one fixed order -- the chain just carries the prefix from rank to rank --
//  and every device receives copies of those bits, so the value does not depend on R, on the
//  chunk size or on timing; kernels::fold_sum is the same fold the in-process engine uses.
//
// WAITS AND FAILURES. Every cross-rank wait is MPI_Test on non-blocking requests in a loop that
// yields, then sleeps (an oversubscribed rank must not hold the core its peers need; OpenMPI's
// blocking calls busy-poll), and that ends on the call's deadline (TimeoutError naming the rank
// and devices waited for) or on the group's abort flag. Any failure -- a device that throws
// (abort(reason) from its runner), a timeout, a mismatch -- records the first reason, aborts the
// two local barriers (releasing the rank's own devices), and the rank's watcher thread sends the
// reason to every other rank through the group's MpiAbortChannel. The groups of one mesh share
// one channel (over every rank of the job), so a failure in any group aborts every group on
// every rank, as the in-process mesh aborts all its groups: a device waiting in another group,
// on another rank, is released too. So one failure ends every rank's collectives within the
// timeout, and a dead rank (kill -9) is a TimeoutError on its neighbours. After an abort the
// group refuses every collective. MPI_Abort is left to the program (mpi_runner.hpp), as a last
// resort when a peer may be dead.
//
// A group that failed leaves its communicator and buffers to MPI_Finalize, and so does a channel
// that aborted. Other ranks may still be sending to them: the leaders' messages of a collective
// this rank never entered, late notices. OpenMPI 4.1 crashes (SIGSEGV) when a communicator is
// freed while another thread's MPI calls take in messages for it, and the channel's watcher is
// such a thread (tests/mpi/collectives_test.cpp, a_failed_group_is_destroyed_...).
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/in_process.hpp"

namespace meshrun {

struct MpiOptions {
  std::chrono::milliseconds timeout{10'000};
  // psum, pmean, pmax, pmin and psum_scatter inputs of at most this many bytes per device take the
  // gather path.
  std::size_t gather_max_bytes = std::size_t{16} * 1024;
  // The chain path's chunk, and how many chunks a rank has in flight per direction.
  std::size_t chunk_bytes = std::size_t{512} * 1024;
  int window = 4;
};

// "device 5 (rank 2)": how every line of the MPI backend names a device.
inline std::string rank_device_name(int device, int rank) {
  return "device " + std::to_string(device) + " (rank " + std::to_string(rank) + ")";
}

class MpiCommunicator;

// The abort flag of a set of groups (one mesh), across the ranks of a communicator.
// PROTOCOL: a private communicator, duplicated without blocking (a rank that never arrives is a
// timeout). Each rank's watcher thread keeps one receive posted on it for a notice from any rank
// and polls it every millisecond; a notice aborts this rank with the sender's reason. A rank that
// aborts for a reason of its own sends it, once, to every other rank (best effort, bounded by one
// second: a dead rank never takes its notice) -- also when the abort comes just before the
// channel stops (the last round runs after the stop request).
class MpiAbortChannel {
 public:
  // Collective over `comm`; `what` names the waiting in a timeout ("creating the group on 'x'").
  MpiAbortChannel(MPI_Comm comm, std::chrono::milliseconds timeout, const std::string& what);
  ~MpiAbortChannel();
  MpiAbortChannel(const MpiAbortChannel&) = delete;
  MpiAbortChannel& operator=(const MpiAbortChannel&) = delete;

  // Records `reason` (the first one wins), runs every listener (releasing this rank's waiters)
  // and has the watcher tell every rank. Any thread may call it.
  void abort(const std::string& reason);
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  std::string reason() const;
  // The reason, waiting up to a second for one to be recorded: a device released from a rank's
  // in-process barrier because a peer in it timed out is released (the barrier's own abort) a
  // moment before that peer records why. "" if none came.
  std::string reason_soon() const;
  // `release` runs on abort (at once if already aborted); forget() removes it. Thread-safe.
  int listen(std::function<void()> release);
  void forget(int id);
  // Ends the watcher (after its last round); the destructor does it too.
  void stop();

 private:
  void watch(const std::stop_token& stop);
  void tell_other_ranks();

  MPI_Comm notices_ = MPI_COMM_NULL;
  int ranks_ = 1, rank_ = 0;
  std::atomic<bool> aborted_{false};
  mutable std::mutex mu_;  // reason_, remote_, listeners_
  std::string reason_;
  bool remote_ = false;  // the reason came from another rank (do not send it back)
  std::vector<std::pair<int, std::function<void()>>> listeners_;
  int next_id_ = 0;
  std::jthread watcher_;
};

// Where a group's members live: member g (its rank in the group) is device device[g] of the mesh,
// hosted by rank owner[g] of the group's communicator. Every rank of it hosts at least one.
struct MpiMembers {
  std::vector<int> device, owner;
};

class MpiGroup {
 public:
  // Collective over `comm` (every rank calls it with the same local_devices); needs MPI
  // initialised with MPI_THREAD_MULTIPLE (the watcher thread and the leader both call MPI).
  // One axis of R * local_devices devices, with an abort channel of its own.
  MpiGroup(MPI_Comm comm, int local_devices, std::string axis, MpiOptions options = {});
  // Any layout, failures shared through `channel` (made over `comm` when null). Collective over
  // `comm`, every rank passing the same members.
  MpiGroup(MPI_Comm comm, MpiMembers members, std::string axis, MpiOptions options,
           std::shared_ptr<MpiAbortChannel> channel);
  ~MpiGroup();
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  int size() const { return static_cast<int>(device_.size()); }  // n: members over all ranks
  int ranks() const { return ranks_; }
  int rank() const { return rank_; }  // in the group's communicator
  int local_devices() const { return local_; }
  // Local member j's rank in the group and number on the mesh.
  int member_rank(int local) const { return mine_[static_cast<std::size_t>(local)]; }
  int member_device(int local) const {
    return device_[static_cast<std::size_t>(member_rank(local))];
  }
  const std::string& axis() const { return axis_; }
  // The handle of local member j; each is used by one thread.
  MpiCommunicator& member(int local);

  // Records `reason` (the first one wins), releases this rank's waiters and tells every rank.
  // Any thread may call it.
  void abort(const std::string& reason) { channel_->abort(reason); }
  bool aborted() const { return channel_->aborted(); }
  std::string reason() const { return channel_->reason(); }
  std::string reason_soon() const { return channel_->reason_soon(); }

 private:
  friend class MpiCommunicator;
  using Clock = std::chrono::steady_clock;

  struct Desc {
    CollectiveOp op;
    std::uint64_t in_count, out_count, seq, perm_hash;
    std::uint32_t subgroup = 0;  // grouped: the subgroups' size (perm_hash: the table's hash)
    bool operator==(const Desc&) const = default;
  };
  struct Slot {
    Desc desc{};
    const float* in = nullptr;
    float* out = nullptr;
    std::span<const int> source_of;
    const IndexGroups* groups = nullptr;  // grouped
  };
  // "psum #3 with 8 elements", and " over axis_index_groups of 2 (table 12345)" when grouped.
  static std::string describe(const Desc& d);

  // Step 2, on the leader.
  void cross(const Desc& d);
  void gather(const Desc& d);               // every rank's [header | k inputs] to every rank
  const float* gathered(int device) const;  // device's input in the gathered buffer
  // The ordered chain over `count` floats of every device's input; the final sum ends in
  // buf_->result on the last rank, and on every rank too with `broadcast`.
  void chain(const Desc& d, std::size_t count, bool broadcast);
  void permute(const Desc& d);
  void grouped(const Desc& d, const IndexGroups& groups);  // gather, then each subgroup's fold
  void check_header(const float* header, const Desc& d, int from) const;
  // Waits for every request, bounded by deadline_; a timeout says "waiting for <what> rank
  // <peer> (devices ...)" -- with peer < 0, the ranks of the requests still pending, from
  // peers_ (the rank of each request, when it holds one per request). An abort ends the wait
  // too, except with `through_abort` (the constructor's: see there).
  void wait(std::span<MPI_Request> reqs, const char* what, int peer, bool through_abort = false);
  [[noreturn]] void timed_out(std::span<MPI_Request> reqs, const char* what, int peer);
  void check_mpi(int rc, const char* call) const;
  std::string where(const Desc& d) const;
  std::string devices_of(int rank) const;  // the devices rank `rank` of data_ hosts
  int world(int rank) const { return world_[static_cast<std::size_t>(rank)]; }

  MPI_Comm data_ = MPI_COMM_NULL;
  int ranks_ = 1, rank_ = 0, local_ = 0;
  std::string axis_;
  MpiOptions options_;
  // The layout: per member, its device and owner (a rank of data_) and its place among its
  // owner's members; per rank of data_, its members (ascending), its MPI_COMM_WORLD rank, and
  // whether the members are consecutive runs in rank order (the chain path's condition).
  std::vector<int> device_, owner_, place_, mine_;
  std::vector<std::vector<int>> hosted_;
  std::vector<int> world_;
  bool runs_ = true;
  std::shared_ptr<MpiAbortChannel> channel_;
  bool own_channel_ = false;  // made by the constructor (no channel given): stopped first
  int listener_ = -1;
  std::unique_ptr<InProcessGroup> arrive_, release_;
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<MpiCommunicator>> members_;

  // Leader-only state, reused from call to call.
  Desc current_{};
  Clock::time_point deadline_{};
  // Every buffer MPI reads or writes is the group's own, never a device's: after a failure a
  // request may still be pending (MPI cannot cancel a non-blocking collective), so a failed group
  // leaks these on destruction instead of freeing memory MPI may still touch.
  struct Buffers {
    std::vector<float> send, recv;                        // gather path, ppermute
    std::vector<std::vector<float>> chain_in, chain_out;  // chain path: `window` chunks each
    std::vector<float> result;                            // chain path: the final sum
  };
  std::unique_ptr<Buffers> buf_ = std::make_unique<Buffers>();
  std::size_t count_ = 0;              // floats per member in buf_->recv (gather path)
  std::vector<std::size_t> block_at_;  // where each rank's block starts in buf_->recv
  std::vector<const float*> srcs_;
  std::vector<float*> dsts_;  // the k local outputs
  std::vector<MPI_Request> reqs_;
  std::vector<int> peers_;  // gather path, ppermute: the rank of each request in reqs_
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MpiGroup& group, int local) : group_(group), local_(local) {}

  int rank() const override { return group_.member_rank(local_); }
  int size() const override { return group_.size(); }
  std::uint64_t seq() const override { return seq_; }
  const char* engine() const override { return "mpi"; }
  // The op of the last collective this device started (for failure reports).
  CollectiveOp last_op() const { return op_; }

  void all_reduce_sum(std::span<const float> in, std::span<float> out) override;
  void all_reduce_mean(std::span<const float> in, std::span<float> out) override;
  void all_reduce_max(std::span<const float> in, std::span<float> out) override;
  void all_reduce_min(std::span<const float> in, std::span<float> out) override;
  void all_gather(std::span<const float> in, std::span<float> out) override;
  void reduce_scatter_sum(std::span<const float> in, std::span<float> out) override;
  void permute(std::span<const float> in, std::span<float> out,
               std::span<const int> source_of) override;
  void grouped(CollectiveOp op, const IndexGroups& groups, std::span<const float> in,
               std::span<float> out) override;

 private:
  void run(CollectiveOp op, std::span<const float> in, std::span<float> out,
           std::span<const int> source_of = {}, const IndexGroups* groups = nullptr);
  void barrier(InProcessGroup& g, const MpiGroup::Desc& d);

  MpiGroup& group_;
  int local_;
  std::uint64_t seq_ = 0;
  CollectiveOp op_ = CollectiveOp::kAllReduce;
};

}  // namespace meshrun
