// The in-process collective engine: the members of one group (a mesh axis, or a tuple of axes, at
// one coordinate of the others; see GROUPS) are threads of one process and
// exchange data through shared memory, synchronised with atomics only (no mutex, no condition
// variable on the collective path).
//
// PROTOCOL (call number c = this member's seq(), sync-point number s = its syncs so far)
//
//  1. Publish. Member r writes its frame for call c -- frames_[r][c & 1]: the call's descriptor
//     (op, element counts, permutation hash, the site it is called from: set_site) and either a
//     copy of its input in the frame's staging buffer (staged path) or pointers to its input and
//     output (direct path). Frames alternate by call parity, so publishing call c+1 never touches
//     what a slow peer may still be reading of call c (see 5). A field is written only where it
//     differs from call c-2's.
//  2. Arrive. r sets arrived_[r] = s and does arrivals_.fetch_add(1). The member whose add makes
//     arrivals_ reach s*n completed sync point s: if anyone is parked, it bumps wake_ and wakes
//     them (futex).
//  3. Wait until arrivals_ >= s*n (see WAITING), or until the abort flag, the deadline or a
//     member's departure (see DEPARTURES).
//  4. Check. r compares every member's descriptor with its own before reading any data; a
//     difference (another op, count, permutation or site) is a CollectiveError on every member --
//     they all see the same descriptors, so they all fail, none mixes data. (Sequence numbers
//     cannot differ: every member passes the same sync points.)
//  5. Move data.
//     staged path (small messages, one sync point): r reads what it needs from the members'
//       staging buffers of call c and writes its own output. (grouped, axis_index_groups: the
//       staging buffers of its subgroup's members, in the subgroup's listed order.) No trailing
//       barrier: a member that returns and publishes call c+1 writes the other frame, and can only
//       come back to this frame at call c+2, after every member arrived at call c+1 -- i.e.
//       finished reading c.
//     direct path (large messages): r reads the members' inputs where they lie (no copy-in) and
//       writes results where they must end up.
//       psum, pmax, pmin (one sync point): the fold is cut into pieces, each computed once and
//         written straight into all n outputs. Pieces are claimed from counters, one lane per CPU
//         that the members published their frames from (lane_layout), so the members that hold a
//         core do the work while the others wait for one (8 threads on 2 cores). A member claims
//         from its own CPU's lane only, so a CPU writes the same output lines call after call and
//         they stay in its cache; another lane it takes over only once that lane's claim counter
//         has stood still for longer than a piece takes (its CPU is not running the members:
//         help_stalled_lanes). A line that goes from one CPU's cache to the other's and back
//         takes 110 or 440-520 ns here (bench/line_rtt), depending on where the host put the
//         CPUs, and a piece writes 512 of them. Whoever
//         finishes a piece adds 1 to its lane's done counter, and whoever finishes a lane's last
//         piece adds 1 to lanes_done_; r returns once lanes_done_ reaches the call's last lane.
//         From then on nobody reads r's input or writes r's output, so no trailing sync point is
//         needed: waiting for the pieces needs only the members that hold them to run, not all n to
//         be scheduled once more. The next call's pieces are claimed only after its first sync
//         point, which every member reaches only after this call's pieces were all done.
//       the other ops (two sync points): r moves its own block, then arrives and waits at sync
//         point s+1, so no member returns (and reuses its buffers) while another still reads or
//         writes them.
//       Up to GroupOptions::blocked_max_bytes per member, a piece is folded 4 KiB at a time
//       through a buffer on the stack, one source or output per pass (kernels.hpp: kBlocked).
//       From GroupOptions::nontemporal_min_bytes per member, psum writes the outputs with
//       non-temporal stores (the 2n buffers no longer fit the cache, and a streaming store skips
//       the read-for-ownership of a line it only overwrites). Those stores are weakly ordered
//       even on x86, so the kernel ends them with an sfence before the piece is counted done;
//       that RMW then publishes them like any other store.
//       grouped (axis_index_groups: Communicator::grouped; two sync points): r reads its
//         subgroup's members' inputs where they lie. psum, pmean, pmax, pmin: the member at
//         position p of a subgroup of k folds the p-th of k contiguous slices of the elements over
//         the subgroup, in its listed order, and writes the slice into all k outputs
//         (kernels::fold_to_all: an output may be its member's input, each element is read from
//         every input before it is written, and no other member touches that slice); pmean's
//         division by k then waits for the trailing sync point (every slice written). all_gather
//         pushes r's block into its subgroup's k outputs at r's position; psum_scatter folds r's
//         block of the subgroup's inputs into r's own output. No pieces or lanes: the subgroups
//         are small and each member has its own share.
//  Reductions fold the members in rank order 0..n-1 for every element on both paths (grouped:
//  the subgroup's members in its listed order), so all
//  members get identical bits, whichever path the size selects and however the threads run.
//  pmax and pmin take psum's paths and pieces with another fold (communicator.hpp's rule:
//  from -inf / +inf with std::max / std::min), so a NaN or a signed zero comes out the same on
//  every path and member.
//
// WAITING. Where threads do not outnumber cores, a waiter spins briefly (the peer is running and
// will arrive soon). Where they do (8 devices on 2 cores), spinning holds the core the late member
// needs, so a waiter only re-checks between sched_yield calls and, after a short bounded time,
// parks on the 32-bit word wake_ (futex) until the completer (of a sync point, or of a direct
// psum's last lane) bumps it -- which it does only when someone is parked (see parked_) -- the
// mesh aborts, or the deadline passes. Each park is bounded by the deadline; on timeout the
// waiter names the members whose arrived_ is behind and aborts the group.
//
// DEPARTURES. A member whose body returned calls depart(): it stores the sync points it passed in
// its slot's `departed`, then departures_.fetch_add(1) and wakes the parked (as a completer does,
// through parked_). A waiter at sync point s that finds a member departed before s knows that
// member never arrives -- the devices took different paths around a collective (a cond's other
// branch, a loop's other trip count) -- and leaves at once with the mismatched-collective error,
// as at its deadline (LEAVING EARLY), instead of waiting for the deadline. A waiter counts the
// departures before it looks and parks only if the count is unchanged after counting itself in
// parked_ (seq_cst both ways), so a departure between its look and its sleep still wakes it.
//
// LEAVING EARLY (abort, deadline, departure) is agreed with the members that may complete the sync
// point: the leaver withdraws its arrival by a CAS that lowers arrivals_ only while it is below
// s*n, so either the sync point completes and every member goes on (a late abort is then seen at
// the next collective), or it never completes and every member leaves -- never some of each, which
// on the direct path would free buffers that peers still read and write. The direct path's trailing
// sync point and psum's wait for its pieces are never left early: once the first sync point
// completed, every member reaches the trailing one, and every claimed piece is finished.
//
// Epochs (arrivals_, arrived_, the lanes' counters, lanes_done_, sequence numbers) are 64-bit and
// only increase: never a few rotating states that a slow member could confuse (DeepSpeed #4048).
//
// GROUPS (meshes of several axes). A mesh {data: 2, model: 4} runs one independent instance of
// this protocol per group -- per ordered tuple of axes and per coordinate of the other axes
// (XLA's replica groups: 'model' is {0,1,2,3} and {4,5,6,7}, 'data' is {0,4}, {1,5}, ...,
// ('data', 'model') is all eight, ranked row-major over the tuple). Nothing is shared between
// groups: each has its own counters, frames and futex word, so a collective in one group never
// waits for or touches another, and a device is in at most one group's collective at a time.
// Reductions fold the group's members in rank order, i.e. row-major over the tuple's axes.
// What is shared is the failure: the mesh aborts every group when any device fails (a throw, a
// mismatch, a timeout -- the member that detects one aborts its own group and throws; the mesh
// then aborts all the others), so a device waiting in any group is released. A timed-out member
// names the late ones by their device numbers on the mesh (InProcessGroup's `devices`).

#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/kernels.hpp"

namespace meshrun {

struct GroupOptions {
  std::chrono::nanoseconds timeout = std::chrono::seconds(10);
  // Messages of at most this many bytes per member take the staged path.
  std::size_t staged_max_bytes = std::size_t{16} * 1024;
  // psum messages of at least this many bytes per member write their outputs with non-temporal
  // stores (the n outputs and n inputs no longer fit the last-level cache; see kernels.hpp).
  std::size_t nontemporal_min_bytes = 4 << 20;
  // psum messages of at most this many bytes per member fold 4 KiB at a time through a stack
  // buffer (kernels::FoldPath::kBlocked), safe from L1 set conflicts when the 2n buffers sit at one
  // offset modulo 4 KiB. With 8 members, 64 KiB took 13.3-13.8 us so, against 16-31 us
  // interleaved when the buffers were placed that way; at 1 MiB (no longer in cache) interleaving
  // was faster, 125-129 us against 146-152 us (bench/README.md, issue #32). Between the two
  // nothing was measured (the bench's sizes are 64 KiB and 1 MiB), so the limit is the size
  // measured to gain.
  std::size_t blocked_max_bytes = 64 << 10;
  // The direct psum cuts its sum into about this many pieces per member, claimed dynamically.
  std::size_t pieces_per_member = 4;
  // For tests only (nothing else sets them): the member of rank pause_rank sleeps for pause_for
  // after a direct psum's first sync point, before it claims a piece -- as a CPU that the host
  // or another process took away would (its lane stalls, and the others take it over).
  int pause_rank = -1;
  std::chrono::nanoseconds pause_for{0};
};

class InProcessCommunicator;

// The direct psum's lanes for one call (InProcessGroup::Lane): one per distinct CPU among `cpus`,
// the CPU each member published (sorted here, in place), in ascending order, at most max_lanes
// (beyond that, CPUs share lanes modulo max_lanes); `home`: the lane of the member that
// published `cpu`. Members on one CPU (a group of a 2-D mesh whose devices are pinned alike) get
// one lane; 8 members on 2 CPUs, two.
struct LaneLayout {
  int lanes, home;
};
LaneLayout lane_layout(std::span<int> cpus, int cpu, int max_lanes);

// The path a collective of `bytes_per_member` (the input of one member) takes with `options`:
// "staged", "direct" or, for a reduction (psum), "direct-blocked" up to blocked_max_bytes and
// "direct-nt" from nontemporal_min_bytes (for benchmark tables).
const char* in_process_path(std::size_t bytes_per_member, bool reduction,
                            const GroupOptions& options = {});

// The state shared by the n members of one group. Create one per run; after an abort it refuses
// every further collective (the mesh makes a new one for the next run).
class InProcessGroup {
 public:
  // `axis` names the group in messages; `devices`, when given, holds each member's number on the
  // whole mesh, which messages then use instead of the rank ("device(s) 5, 7 never arrived").
  InProcessGroup(int size, std::string axis, GroupOptions options = {},
                 std::vector<int> devices = {});
  ~InProcessGroup();
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int size() const { return size_; }
  const std::string& axis() const { return axis_; }
  // The handle member `rank` uses; each is used by one thread only.
  InProcessCommunicator& member(int rank);

  // Releases every waiter with a CollectiveError; later collectives fail at once.
  void abort();
  bool aborted() const { return aborted_.load(std::memory_order_acquire) != 0; }

 private:
  friend class InProcessCommunicator;

  // What a member publishes about its call: equal on every member (the sequence number needs no
  // place here: every member passes the same sync points, so the numbers cannot differ where two
  // calls meet).
  struct Desc {
    CollectiveOp op;
    std::size_t in_count, out_count;
    std::uint64_t perm_hash;
    std::uint64_t site;  // Communicator::set_site's
    // grouped: the subgroups' size k (0: the whole group); perm_hash then holds the table's hash.
    std::uint32_t subgroup = 0;
    bool operator==(const Desc&) const = default;
  };
  // A frame is written only where it changes (write_if_changed, in publish_staged and
  // publish_direct): a program or benchmark that calls
  // the same collective on the same buffers leaves it as it was two calls ago, so it stays in
  // every CPU's cache and costs no cache-line transfer between cores at each call.
  struct alignas(64) Frame {
    Desc desc{};
    const float* in = nullptr;
    float* out = nullptr;
    int cpu = -1;  // direct path: the CPU the member published from (sched_getcpu), for the lanes
    const char* site_text = nullptr;  // Desc::site's text, for a mismatch's message
    std::vector<float> staging;       // grows to the largest staged message, then is reused
  };
  static constexpr std::uint64_t kNotDeparted = UINT64_MAX;
  struct Slot {
    // Written by the member itself at every sync point, on its own line (relaxed: read only for
    // the timeout report).
    alignas(64) std::atomic<std::uint64_t> arrived{0};
    // The sync points the member had passed when its body returned (depart), else kNotDeparted:
    // it never arrives at a later one. Written once a run; read by the waiters (DEPARTURES).
    std::atomic<std::uint64_t> departed{kNotDeparted};
    Frame frames[2];
  };

  // One cache line each: the hot words are not false-shared with each other or the slots.
  // arrivals_: every member adds 1 per sync point (seq_cst, for parked_; the RMW publishes the
  // member's frame, and the completing add acquires all frames through the release sequence).
  alignas(64) std::atomic<std::uint64_t> arrivals_{0};
  // wake_: the futex word parked waiters sleep on; bumped by abort() and, when someone is parked,
  // by a sync point's completer and by the finisher of a direct psum's last lane.
  alignas(64) std::atomic<std::uint32_t> wake_{0};
  // parked_: waiters about to sleep or asleep. seq_cst with the counter a waiter waits on
  // (Dekker): either the waiter, after counting itself here, sees the counter complete, or the
  // completer sees parked_ > 0 and bumps wake_ and makes the wake-up system call. With nobody
  // parked (the usual case) a completion writes no shared line but its counter.
  alignas(64) std::atomic<std::uint32_t> parked_{0};
  // lanes_done_: the direct psum's lanes finished, counted over all its calls. The finisher of a
  // lane's last piece adds 1 (seq_cst: it publishes the lane's writes, which its lane's done
  // counter gathered, and orders with parked_ like arrivals_); the one that reaches the call's end
  // (lanes_base_ + its non-empty lanes) wakes the waiters. A member returns once it reaches the
  // end. Counting lanes, not pieces, here keeps the line that both CPUs touch to one add per lane.
  alignas(64) std::atomic<std::uint64_t> lanes_done_{0};
  // aborted_: set once by abort(); every wait checks it.
  alignas(64) std::atomic<std::uint32_t> aborted_{0};
  // departures_: members whose body returned (depart). seq_cst with parked_, as arrivals_: a
  // waiter that saw no departure before it parked is woken by the next one.
  alignas(64) std::atomic<std::uint32_t> departures_{0};

  // Bumps wake_ and wakes the parked waiters, if any (a sync point or the pieces completed).
  void wake_waiters();

  // Member `rank`'s number in messages.
  int device_of(int rank) const {
    return devices_.empty() ? rank : devices_[static_cast<std::size_t>(rank)];
  }

  int size_;
  std::string axis_;
  std::vector<int> devices_;
  GroupOptions options_;
  unsigned cpus_;  // usable_cpus(), read once
  bool oversubscribed_;
  std::unique_ptr<Slot[]> slots_;
  // The direct psum's lanes: each call's pieces are cut into one contiguous run per lane, a lane
  // per CPU the members run on (lane_layout; at most one per member and one per usable CPU,
  // max_lanes_), and each lane's pieces are claimed from its own counter.
  // Every member claims with a CAS that adds 1 only while the counter is below the lane's end for
  // this call, so each piece is computed exactly once and the counter stops exactly at the end:
  // the lane's next call starts there, a number every member computes alike from the calls it
  // made (lane_base_). Relaxed suffices: the CAS only hands out disjoint index ranges; the inputs
  // the pieces read were published by the call's sync point, the outputs they write are
  // published by the lanes' done counters, and no member claims for the next call before every
  // member arrived at it, i.e. saw this call's pieces done. `done` counts the lane's finished
  // pieces alike (acq_rel: each add publishes its piece's writes, and the one that reaches the
  // lane's end acquires them all before it counts the lane in lanes_done_). Both are written by one
  // CPU, the lane's own, so they share its line; another CPU reads `next` at most once per
  // stall_after (help_stalled_lanes).
  struct alignas(64) Lane {
    std::atomic<std::uint64_t> next{0};
    std::atomic<std::uint64_t> done{0};
  };
  int max_lanes_;
  std::unique_ptr<Lane[]> lane_next_;
  std::vector<std::unique_ptr<InProcessCommunicator>> members_;
};

class InProcessCommunicator final : public Communicator {
 public:
  // The pointer tables are sized here, not at a call: nothing between a call's first sync point
  // and its last piece may throw (a member unwinding there would free buffers its peers write).
  InProcessCommunicator(InProcessGroup& group, int rank, int lanes)
      : group_(group),
        rank_(rank),
        lane_base_(static_cast<std::size_t>(lanes), 0),
        runs_(static_cast<std::size_t>(lanes)),
        srcs_(static_cast<std::size_t>(group.size())),
        dsts_(static_cast<std::size_t>(group.size())),
        sub_srcs_(static_cast<std::size_t>(group.size())),
        sub_dsts_(static_cast<std::size_t>(group.size())),
        lane_cpus_(static_cast<std::size_t>(group.size())) {}

  int rank() const override { return rank_; }
  int size() const override { return group_.size_; }
  std::uint64_t seq() const override { return seq_; }
  const char* engine() const override { return "in-process"; }

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
  void depart() override;

 private:
  using Frame = InProcessGroup::Frame;
  using Desc = InProcessGroup::Desc;

  // Steps 1-4 for the staged path: copy `in` to the staging buffer, arrive, wait, check.
  void publish_staged(const Desc& desc, std::span<const float> in);
  // Steps 1-4 for the direct path: publish the pointers, arrive, wait, check.
  void publish_direct(const Desc& desc, const float* in, float* out);
  // The trailing sync point of the direct path.
  void finish_direct();
  // Steps 2-4 of a call's first sync point: arrive, wait, check (and the SyncMarks, when asked).
  void first_sync(const Desc& desc);
  // Steps 2-3. A cancellable wait ends early on the abort flag or the deadline (see LEAVING).
  void arrive_and_wait(bool cancellable = true);
  // Step 3 on any counter: until `counter` reaches `target` (see WAITING). Only a wait on
  // arrivals_ may be cancellable. `help`: the wait for a direct psum's lanes, which takes over
  // the pieces of a lane that stalls (help_stalled_lanes).
  void wait_until(const std::atomic<std::uint64_t>& counter, std::uint64_t target, bool cancellable,
                  bool help = false);
  // The direct psum: claims and folds lane l's pieces until none is left unclaimed.
  void claim_lane(int l);
  // Claims the pieces of every other lane whose claim counter has stood still for
  // psum_.stall_after (at once on the non-temporal path): its CPU's members are not running
  // (another process, a host that preempted the CPU, threads that migrated). Returns whether a
  // lane may still have pieces to claim.
  bool help_stalled_lanes(std::chrono::steady_clock::time_point now);
  Desc begin(CollectiveOp op, std::size_t in_count, std::size_t out_count, std::uint64_t perm_hash);
  bool staged(std::size_t floats) const;
  // psum (op kAllReduce), pmean (kAllReduceMean: the sum, then this member's output / n), pmax
  // (kAllReduceMax) or pmin (kAllReduceMin).
  void all_reduce(std::span<const float> in, std::span<float> out, CollectiveOp op);
  void check_descs(const Desc& mine);
  Frame& frame_of(int rank) { return group_.slots_[rank].frames[seq_ & 1]; }
  // The members whose arrived_ is behind this member's current sync point, e.g. "5, 7".
  std::vector<int> missing_members() const;
  [[noreturn]] void timed_out(const std::vector<int>& missing);
  // A member that departed before this member's current sync point (it never arrives there):
  // its rank, or -1. Sets `seen` to the departures counted before the look.
  int departed_member(std::uint32_t& seen) const;
  [[noreturn]] void departed(int rank);
  std::string where(const Desc& d) const;

  InProcessGroup& group_;
  int rank_;
  std::uint64_t seq_ = 0;                 // collectives started
  std::uint64_t syncs_ = 0;               // sync points passed
  std::uint64_t lanes_base_ = 0;          // lanes_done_ at the start of the next direct psum
  std::vector<std::uint64_t> lane_base_;  // each lane's counters at the start of the next one
  Desc current_{};                        // the collective in progress, for error messages
  // The direct psum in progress.
  struct PsumCall {
    std::size_t size = 0, piece = 0;  // elements per member, per piece
    kernels::Combine combine{};       // the sum, or pmax's or pmin's fold
    kernels::FoldPath path{};
    std::uint64_t end = 0;  // on lanes_done_
    int lanes = 0, home = 0;
    std::chrono::nanoseconds stall_after{};
  };
  PsumCall psum_;
  // Each lane's pieces in this call: counter values [first, end), the first one's index; and
  // what this member last saw of its claim counter, and when (help_stalled_lanes).
  struct LaneRun {
    std::uint64_t first = 0, end = 0, lo_piece = 0, seen = 0;
    std::chrono::steady_clock::time_point seen_at{};
  };
  std::vector<LaneRun> runs_;
  // Per-call tables, one entry per member, sized by the constructor (the CPUs: lane_layout's
  // scratch).
  std::vector<const float*> srcs_;
  std::vector<float*> dsts_;
  std::vector<const float*> sub_srcs_;  // grouped: this member's subgroup's, in its order
  std::vector<float*> sub_dsts_;
  std::vector<int> lane_cpus_;
};

}  // namespace meshrun
