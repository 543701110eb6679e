#include "collectives/in_process.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "collectives/futex.hpp"
#include "collectives/kernels.hpp"
#include "support/cpus.hpp"
#include "support/errors.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MESHRUN_PAUSE() _mm_pause()
#else
#define MESHRUN_PAUSE() std::this_thread::yield()
#endif

namespace meshrun {

namespace {
// Not oversubscribed: spin this many pause instructions before yielding (a running peer is
// microseconds away). Oversubscribed: no spin at all.
constexpr int kSpins = 2000;
// Then re-check between sched_yield calls for this long before parking.
constexpr auto kYieldFor = std::chrono::microseconds(100);
// A wait that cannot be cancelled (the direct path's trailing sync point, psum's wait for its
// pieces) parks in slices of this.
constexpr auto kUnboundedSlice = std::chrono::milliseconds(100);
// A direct psum's lane stalls when its claim counter stands still for this long plus the time
// its piece may take; a waiter looks every kHelpEvery spins, at every yield, and when parked, at
// the end of each slice of max(stall_after, kHelpSlice) while a lane may have pieces unclaimed.
constexpr auto kStallSlack = std::chrono::microseconds(20);
constexpr int kHelpEvery = 128;
constexpr auto kHelpSlice = std::chrono::microseconds(200);

}  // namespace

LaneLayout lane_layout(std::span<int> cpus, int cpu, int max_lanes) {
  std::sort(cpus.begin(), cpus.end());
  const auto distinct = std::unique(cpus.begin(), cpus.end());
  const int lanes =
      std::clamp(static_cast<int>(distinct - cpus.begin()), 1, std::max(max_lanes, 1));
  const auto at = std::lower_bound(cpus.begin(), distinct, cpu);
  return {lanes, static_cast<int>(at - cpus.begin()) % lanes};
}

namespace {
// How a direct psum of `bytes` per member folds its pieces: the one choice, which all_reduce
// makes and in_process_path names.
kernels::FoldPath psum_fold_path(std::size_t bytes, const GroupOptions& options) {
  if (bytes >= options.nontemporal_min_bytes) return kernels::FoldPath::kNonTemporal;
  if (bytes <= options.blocked_max_bytes) return kernels::FoldPath::kBlocked;
  return kernels::FoldPath::kInterleaved;
}
}  // namespace

const char* in_process_path(std::size_t bytes_per_member, bool reduction,
                            const GroupOptions& options) {
  if (bytes_per_member <= options.staged_max_bytes) return "staged";
  if (!reduction) return "direct";
  switch (psum_fold_path(bytes_per_member, options)) {
    case kernels::FoldPath::kBlocked:
      return "direct-blocked";
    case kernels::FoldPath::kNonTemporal:
      return "direct-nt";
    case kernels::FoldPath::kInterleaved:
      break;
  }
  return "direct";
}

// ---------------------------------------------------------------- group

InProcessGroup::InProcessGroup(int size, std::string axis, GroupOptions options,
                               std::vector<int> devices)
    : size_(size),
      axis_(std::move(axis)),
      devices_(std::move(devices)),
      options_(options),
      cpus_(usable_cpus()),
      oversubscribed_(static_cast<unsigned>(size) > cpus_),
      slots_(new Slot[static_cast<std::size_t>(size)]),
      max_lanes_(static_cast<int>(
          std::clamp<unsigned>(cpus_, 1, static_cast<unsigned>(std::max(size, 1))))),
      lane_next_(new Lane[static_cast<std::size_t>(max_lanes_)]) {
  MESHRUN_CHECK(size >= 1, "a group needs at least one member");
  MESHRUN_CHECK(devices_.empty() || devices_.size() == static_cast<std::size_t>(size),
                "one device number per member");
  for (int r = 0; r < size; ++r)
    members_.push_back(std::make_unique<InProcessCommunicator>(*this, r, max_lanes_));
}

InProcessGroup::~InProcessGroup() = default;

InProcessCommunicator& InProcessGroup::member(int rank) {
  MESHRUN_CHECK(rank >= 0 && rank < size_, "member rank out of range");
  return *members_[static_cast<std::size_t>(rank)];
}

void InProcessGroup::abort() {
  aborted_.store(1, std::memory_order_seq_cst);
  wake_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(wake_);  // unconditionally: a waiter may be between its checks and its sleep
}

// ---------------------------------------------------------------- synchronisation

std::string InProcessCommunicator::where(const Desc& d) const {
  return collective_label(d.op, seq_, group_.axis_);
}

void InProcessCommunicator::arrive_and_wait(bool cancellable) {
  InProcessGroup& g = group_;
  const std::uint64_t s = ++syncs_;
  const std::uint64_t target = s * static_cast<std::uint64_t>(g.size_);
  if (cancellable && g.aborted()) {
    throw AbortedError(where(current_) + ": aborted because another device failed");
  }
  g.slots_[rank_].arrived.store(s, std::memory_order_relaxed);
  // seq_cst (an acq_rel RMW, and ordered with parked_ below): publishes this member's frame and,
  // for the completer, acquires every member's frame through the release sequence of the adds.
  if (g.arrivals_.fetch_add(1, std::memory_order_seq_cst) + 1 == target) {
    g.wake_waiters();
    return;
  }
  wait_until(g.arrivals_, target, cancellable);
}

void InProcessGroup::wake_waiters() {
  if (parked_.load(std::memory_order_seq_cst) == 0) return;
  wake_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(wake_);
}

void InProcessCommunicator::wait_until(const std::atomic<std::uint64_t>& counter,
                                       std::uint64_t target, bool cancellable, bool help) {
  InProcessGroup& g = group_;
  auto done = [&] { return counter.load(std::memory_order_acquire) >= target; };
  // Leaving early must agree with whoever completes the sync point: withdraw this member's
  // arrival (CAS arrivals_ down) unless the sync point is already complete -- then the others may
  // be using this member's buffers (direct path), so it stays and goes on with them. Only the
  // first sync point is cancellable, and it waits on arrivals_.
  auto withdraw = [&] {
    std::uint64_t v = g.arrivals_.load(std::memory_order_acquire);
    while (v < target) {
      if (g.arrivals_.compare_exchange_weak(v, v - 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  };
  std::uint32_t departures = 0;  // counted at the last look (DEPARTURES)
  auto check_abort = [&] {
    if (cancellable && g.aborted() && withdraw())
      throw AbortedError(where(current_) + ": aborted because another device failed");
    if (!cancellable) return;
    if (const int r = departed_member(departures); r >= 0 && withdraw()) departed(r);
  };

  if (!g.oversubscribed_) {
    for (int i = 0; i < kSpins; ++i) {
      if (done()) return;
      if (help && i % kHelpEvery == 0) help_stalled_lanes(std::chrono::steady_clock::now());
      MESHRUN_PAUSE();
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + g.options_.timeout;
  // Yield phase: hand the core to a peer that has not arrived yet, re-checking in between.
  for (;;) {
    if (done()) return;
    check_abort();
    const auto now = std::chrono::steady_clock::now();
    if (help) help_stalled_lanes(now);
    if (now - start > kYieldFor) break;
    sched_yield();
  }
  // Park phase: sleep on wake_ until the completer bumps it (bounded by the deadline).
  for (;;) {
    check_abort();
    const auto now = std::chrono::steady_clock::now();
    // Once no lane has pieces left to claim, helping is over: park until woken.
    if (help) help = help_stalled_lanes(now);
    if (cancellable && now >= deadline) {
      // Who had not arrived by the deadline: read before withdrawing, since a member arriving
      // after the withdrawal can no longer complete the sync point but is just as late.
      const std::vector<int> late = missing_members();
      if (withdraw()) timed_out(late);
      return;  // completed just now
    }
    g.parked_.fetch_add(1, std::memory_order_seq_cst);
    const std::uint32_t w = g.wake_.load(std::memory_order_seq_cst);
    // seq_cst, after counting itself parked: a completer that saw parked_ == 0 made its add
    // before this load in the single total order, so this load sees it (see parked_).
    if (counter.load(std::memory_order_seq_cst) < target &&
        !(cancellable &&
          (g.aborted() || g.departures_.load(std::memory_order_seq_cst) != departures)))
      futex_wait_for(g.wake_, w,
                     cancellable ? deadline - now
                     : help      ? std::max<std::chrono::nanoseconds>(psum_.stall_after, kHelpSlice)
                                 : std::chrono::nanoseconds(kUnboundedSlice));
    g.parked_.fetch_sub(1, std::memory_order_seq_cst);
    if (done()) return;
  }
}

std::vector<int> InProcessCommunicator::missing_members() const {
  const InProcessGroup& g = group_;
  std::vector<int> missing;
  for (int r = 0; r < g.size_; ++r) {
    if (g.slots_[r].arrived.load(std::memory_order_relaxed) < syncs_)
      missing.push_back(g.device_of(r));
  }
  return missing;
}

int InProcessCommunicator::departed_member(std::uint32_t& seen) const {
  const InProcessGroup& g = group_;
  seen = g.departures_.load(std::memory_order_seq_cst);
  if (seen == 0) return -1;
  for (int r = 0; r < g.size_; ++r) {
    if (g.slots_[r].departed.load(std::memory_order_acquire) < syncs_) return r;
  }
  return -1;
}

void InProcessCommunicator::depart() {
  InProcessGroup& g = group_;
  g.slots_[rank_].departed.store(syncs_, std::memory_order_release);
  g.departures_.fetch_add(1, std::memory_order_seq_cst);
  g.wake_waiters();
}

void InProcessCommunicator::departed(int rank) {
  InProcessGroup& g = group_;
  g.abort();
  const char* at = frame_of(rank_).site_text;
  throw CollectiveError("mismatched collectives on '" + g.axis_ + "': device " +
                        std::to_string(g.device_of(rank)) + " left its body without calling " +
                        where(current_) + ", which device " + std::to_string(g.device_of(rank_)) +
                        " called" + (at != nullptr ? std::string(" at ") + at : std::string()) +
                        ": the devices took different paths around a collective (a branch of a "
                        "cond, or a loop's trip count, that differs between them)");
}

void InProcessCommunicator::timed_out(const std::vector<int>& missing) {
  InProcessGroup& g = group_;
  g.abort();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(g.options_.timeout).count();
  std::string list;
  for (int r : missing) list += (list.empty() ? "" : ", ") + std::to_string(r);
  throw TimeoutError(where(current_) + ": timed out after " + std::to_string(ms) +
                         " ms; device(s) " + list + " never arrived",
                     missing);
}

void InProcessCommunicator::check_descs(const Desc& mine) {
  for (int r = 0; r < group_.size_; ++r) {
    const Desc& d = frame_of(r).desc;
    if (d == mine) continue;
    // Both calls get this member's sequence number: every member passes the same sync points, so
    // the numbers are equal where two calls meet (step 4).
    auto show = [this](const Desc& x, int member) {
      std::string s =
          collective_label(x.op, seq_) + " with " + std::to_string(x.in_count) + " elements";
      if (x.op == CollectiveOp::kPermute)
        s += " and permutation " + std::to_string(x.perm_hash % 100000);
      if (x.subgroup != 0) {
        s += " over axis_index_groups of " + std::to_string(x.subgroup) + " (table " +
             std::to_string(x.perm_hash % 100000) + ")";
      }
      if (const char* at = frame_of(member).site_text; at != nullptr) s += std::string(" at ") + at;
      return s;
    };
    const int lo = std::min(r, rank_), hi = std::max(r, rank_);
    const Desc& dlo = lo == rank_ ? mine : d;
    const Desc& dhi = hi == rank_ ? mine : d;
    throw CollectiveError("mismatched collectives on '" + group_.axis_ + "': device " +
                          std::to_string(group_.device_of(lo)) + " called " + show(dlo, lo) +
                          ", device " + std::to_string(group_.device_of(hi)) + " called " +
                          show(dhi, hi));
  }
}

void InProcessCommunicator::first_sync(const Desc& desc) {
  if (marks_) marks_->arrived = std::chrono::steady_clock::now();
  arrive_and_wait();
  if (marks_) marks_->complete = std::chrono::steady_clock::now();
  check_descs(desc);
}

namespace {
// Writes `to` only where it differs (step 1): an unchanged line stays shared by every CPU's cache.
template <class T>
void write_if_changed(T& to, const T& value) {
  if (!(to == value)) to = value;
}
}  // namespace

void InProcessCommunicator::publish_staged(const Desc& desc, std::span<const float> in) {
  current_ = desc;
  Frame& f = frame_of(rank_);
  write_if_changed(f.desc, desc);
  write_if_changed(f.site_text, site_text_);
  if (f.staging.size() < in.size()) f.staging.resize(in.size());
  if (!in.empty()) std::memcpy(f.staging.data(), in.data(), in.size_bytes());
  first_sync(desc);
  for (int r = 0; r < group_.size_; ++r) srcs_[r] = frame_of(r).staging.data();
}

void InProcessCommunicator::publish_direct(const Desc& desc, const float* in, float* out) {
  current_ = desc;
  Frame& f = frame_of(rank_);
  write_if_changed(f.desc, desc);
  write_if_changed(f.site_text, site_text_);
  write_if_changed(f.in, in);
  write_if_changed(f.out, out);
  write_if_changed(f.cpu, sched_getcpu());
  first_sync(desc);
  for (int r = 0; r < group_.size_; ++r) {
    srcs_[r] = frame_of(r).in;
    dsts_[r] = frame_of(r).out;
    lane_cpus_[r] = frame_of(r).cpu;
  }
}

// Not cancellable: once the first sync point completed, every member computes its share and
// arrives here (nothing in between waits or throws); leaving early on an abort or a deadline would
// free buffers that peers are still reading and writing.
void InProcessCommunicator::finish_direct() { arrive_and_wait(/*cancellable=*/false); }

bool InProcessCommunicator::staged(std::size_t floats) const {
  return floats * sizeof(float) <= group_.options_.staged_max_bytes;
}

InProcessCommunicator::Desc InProcessCommunicator::begin(CollectiveOp op, std::size_t in_count,
                                                         std::size_t out_count,
                                                         std::uint64_t perm_hash) {
  if (group_.aborted()) {
    throw AbortedError(collective_label(op, seq_ + 1, group_.axis_) +
                       ": the mesh was aborted by an earlier failure");
  }
  ++seq_;
  return Desc{op, in_count, out_count, perm_hash, site_};
}

// ---------------------------------------------------------------- the collectives

void InProcessCommunicator::all_reduce_sum(std::span<const float> in, std::span<float> out) {
  all_reduce(in, out, CollectiveOp::kAllReduce);
}

void InProcessCommunicator::all_reduce_mean(std::span<const float> in, std::span<float> out) {
  all_reduce(in, out, CollectiveOp::kAllReduceMean);
  const auto n = static_cast<float>(group_.size_);
  for (float& v : out) v /= n;  // every member divides the same bits the same way
}

void InProcessCommunicator::all_reduce_max(std::span<const float> in, std::span<float> out) {
  all_reduce(in, out, CollectiveOp::kAllReduceMax);
}

void InProcessCommunicator::all_reduce_min(std::span<const float> in, std::span<float> out) {
  all_reduce(in, out, CollectiveOp::kAllReduceMin);
}

void InProcessCommunicator::all_reduce(std::span<const float> in, std::span<float> out,
                                       CollectiveOp op) {
  MESHRUN_CHECK(in.size() == out.size(),
                std::string(op_name(op)) + ": input and output differ in size");
  const kernels::Combine combine = op == CollectiveOp::kAllReduceMax   ? kernels::Combine::kMax
                                   : op == CollectiveOp::kAllReduceMin ? kernels::Combine::kMin
                                                                       : kernels::Combine::kSum;
  const Desc desc = begin(op, in.size(), out.size(), 0);
  const int n = group_.size_;
  if (staged(in.size())) {
    publish_staged(desc, in);
    kernels::fold(combine, srcs_.data(), n, out.data(), 0, out.size());
    return;
  }
  publish_direct(desc, in.data(), out.data());
  const kernels::FoldPath path = psum_fold_path(in.size() * sizeof(float), group_.options_);
  // The sum is computed once per element, piece by piece, written into every member's output:
  // about pieces_per_member pieces per member (whole cache lines, at least 4 KiB), each claimed
  // by whichever member gets to it first -- so the work goes to the threads that hold a core.
  const auto un = static_cast<std::size_t>(n);
  const std::size_t k = std::max<std::size_t>(1, group_.options_.pieces_per_member);
  const std::size_t piece =
      std::max<std::size_t>(1024, ((in.size() + k * un - 1) / (k * un) + 15) / 16 * 16);
  const std::uint64_t total = (in.size() + piece - 1) / piece;
  InProcessGroup& g = group_;
  // The pieces are cut into one contiguous run per lane, a lane per CPU the members published
  // (lane_layout). A member claims from its own CPU's lane, so the same CPU writes the same lines
  // of the outputs call after call (they stay in its cache); then it waits for the other lanes,
  // helping one only when it stalls (help_stalled_lanes): their lines are in another CPU's cache.
  const LaneLayout layout = lane_layout(lane_cpus_, frame_of(rank_).cpu, g.max_lanes_);
  psum_.size = in.size();
  psum_.piece = piece;
  psum_.combine = combine;
  psum_.path = path;
  psum_.lanes = layout.lanes;
  psum_.home = layout.home;
  // Every lane with a piece (each has one when total >= lanes) is counted done once.
  psum_.end =
      lanes_base_ + std::min<std::uint64_t>(total, static_cast<std::uint64_t>(layout.lanes));
  lanes_base_ = psum_.end;
  // Past the last-level cache (the non-temporal path) no CPU holds a lane's lines: help at once.
  // Otherwise a lane stalls when its claim counter stands still for longer than a piece can take
  // (its bytes at 10 GB/s) plus kStallSlack.
  psum_.stall_after =
      path == kernels::FoldPath::kNonTemporal
          ? std::chrono::nanoseconds(0)
          : kStallSlack + std::chrono::nanoseconds(piece * un * 2 * sizeof(float) / 10);
  for (int l = 0; l < layout.lanes; ++l) {
    const auto ul = static_cast<std::uint64_t>(l),
               ulanes = static_cast<std::uint64_t>(layout.lanes);
    const std::uint64_t lo_piece = total * ul / ulanes, hi_piece = total * (ul + 1) / ulanes;
    LaneRun& run = runs_[static_cast<std::size_t>(l)];
    run.first = lane_base_[static_cast<std::size_t>(l)];
    run.end = run.first + (hi_piece - lo_piece);
    run.lo_piece = lo_piece;
    run.seen = run.first;
    run.seen_at = {};
    lane_base_[static_cast<std::size_t>(l)] = run.end;
  }
  if (rank_ == g.options_.pause_rank) std::this_thread::sleep_for(g.options_.pause_for);
  claim_lane(layout.home);
  // No trailing sync point: once every piece is done, nobody reads this member's input or writes
  // its output any more (see step 5), so it may return -- without waiting for all n members to be
  // scheduled again, which on 2 cores costs about as much as the data at 64 KiB.
  wait_until(g.lanes_done_, psum_.end, /*cancellable=*/false, /*help=*/true);
}

void InProcessCommunicator::claim_lane(int l) {
  InProcessGroup& g = group_;
  const LaneRun& run = runs_[static_cast<std::size_t>(l)];
  InProcessGroup::Lane& lane = g.lane_next_[l];
  std::uint64_t v = lane.next.load(std::memory_order_relaxed);
  while (v < run.end) {
    if (!lane.next.compare_exchange_weak(v, v + 1, std::memory_order_relaxed)) continue;
    const std::size_t lo = (run.lo_piece + (v - run.first)) * psum_.piece;
    kernels::fold_to_all(psum_.combine, srcs_.data(), group_.size_, dsts_.data(), group_.size_, lo,
                         std::min(psum_.size, lo + psum_.piece), psum_.path);
    if (lane.done.fetch_add(1, std::memory_order_acq_rel) + 1 == run.end &&
        g.lanes_done_.fetch_add(1, std::memory_order_seq_cst) + 1 == psum_.end)
      g.wake_waiters();
    v = lane.next.load(std::memory_order_relaxed);
  }
}

bool InProcessCommunicator::help_stalled_lanes(std::chrono::steady_clock::time_point now) {
  InProcessGroup& g = group_;
  bool unclaimed = false;
  for (int l = 0; l < psum_.lanes; ++l) {
    LaneRun& run = runs_[static_cast<std::size_t>(l)];
    if (l == psum_.home) continue;
    if (run.seen_at == std::chrono::steady_clock::time_point{}) {
      run.seen_at = now;  // the first look: as if its counter stood where the call began
    }
    // Read another CPU's counter only once per stall_after: each read while that CPU claims
    // pieces moves the line between the caches (and back for its next claim).
    if (now - run.seen_at < psum_.stall_after) {
      unclaimed = true;
      continue;
    }
    const std::uint64_t v = g.lane_next_[l].next.load(std::memory_order_relaxed);
    if (v >= run.end) continue;  // every piece claimed
    if (v != run.seen && psum_.stall_after.count() != 0) {
      run.seen = v;  // progress: wait on
      run.seen_at = now;
      unclaimed = true;
      continue;
    }
    claim_lane(l);
  }
  return unclaimed;
}

void InProcessCommunicator::all_gather(std::span<const float> in, std::span<float> out) {
  const std::size_t n = static_cast<std::size_t>(group_.size_), m = in.size();
  MESHRUN_CHECK(out.size() == n * m, "all_gather: output is not n times the input");
  const Desc desc = begin(CollectiveOp::kAllGather, m, out.size(), 0);
  if (staged(m)) {
    publish_staged(desc, in);
    for (std::size_t r = 0; r < n; ++r)
      if (m) std::memcpy(out.data() + r * m, srcs_[r], m * sizeof(float));
    return;
  }
  publish_direct(desc, in.data(), out.data());
  for (std::size_t q = 0; q < n; ++q)  // push this member's block into every output
    std::memcpy(dsts_[q] + static_cast<std::size_t>(rank_) * m, in.data(), m * sizeof(float));
  finish_direct();
}

void InProcessCommunicator::reduce_scatter_sum(std::span<const float> in, std::span<float> out) {
  const std::size_t n = static_cast<std::size_t>(group_.size_), m = out.size();
  MESHRUN_CHECK(in.size() == n * m, "psum_scatter: input is not n times the output");
  const Desc desc = begin(CollectiveOp::kReduceScatter, in.size(), m, 0);
  const std::size_t offset = static_cast<std::size_t>(rank_) * m;
  if (staged(in.size())) {
    publish_staged(desc, in);
  } else {
    publish_direct(desc, in.data(), out.data());
  }
  for (std::size_t r = 0; r < n; ++r) srcs_[r] += offset;
  kernels::fold_sum(srcs_.data(), static_cast<int>(n), out.data(), 0, m);
  if (!staged(in.size())) finish_direct();
}

void InProcessCommunicator::permute(std::span<const float> in, std::span<float> out,
                                    std::span<const int> source_of) {
  MESHRUN_CHECK(in.size() == out.size(), "ppermute: input and output differ in size");
  MESHRUN_CHECK(source_of.size() == static_cast<std::size_t>(group_.size_),
                "ppermute: the source table needs one entry per member");
  const Desc desc =
      begin(CollectiveOp::kPermute, in.size(), out.size(), permutation_hash(source_of));
  const bool small = staged(in.size());
  if (small) {
    publish_staged(desc, in);
  } else {
    publish_direct(desc, in.data(), out.data());
  }
  const int src = source_of[static_cast<std::size_t>(rank_)];
  if (src < 0) {
    std::fill(out.begin(), out.end(), 0.0f);
  } else if (!out.empty()) {
    std::memcpy(out.data(), srcs_[static_cast<std::size_t>(src)], out.size_bytes());
  }
  if (!small) finish_direct();
}

void InProcessCommunicator::grouped(CollectiveOp op, const IndexGroups& groups,
                                    std::span<const float> in, std::span<float> out) {
  MESHRUN_CHECK(groups.members() == group_.size_,
                std::string(op_name(op)) + ": axis_index_groups of another group's size");
  const std::span<const int> sub = groups.of(rank_);
  const int k = groups.subgroup_size();
  const auto uk = static_cast<std::size_t>(k);
  const auto pos = static_cast<std::size_t>(groups.position(rank_));
  const bool gather = op == CollectiveOp::kAllGather, scatter = op == CollectiveOp::kReduceScatter;
  MESHRUN_CHECK(gather    ? out.size() == uk * in.size()
                : scatter ? in.size() == uk * out.size()
                          : in.size() == out.size(),
                std::string(op_name(op)) + ": input and output sizes do not fit the subgroups");
  MESHRUN_CHECK(op != CollectiveOp::kPermute, "ppermute takes no axis_index_groups");
  Desc desc = begin(op, in.size(), out.size(), groups.hash());
  desc.subgroup = static_cast<std::uint32_t>(k);
  const bool small = staged(in.size());
  if (small) {
    publish_staged(desc, in);
  } else {
    publish_direct(desc, in.data(), out.data());
  }
  for (std::size_t i = 0; i < uk; ++i) {
    sub_srcs_[i] = srcs_[static_cast<std::size_t>(sub[i])];
    sub_dsts_[i] = small ? nullptr : dsts_[static_cast<std::size_t>(sub[i])];
  }
  const kernels::Combine combine = op == CollectiveOp::kAllReduceMax   ? kernels::Combine::kMax
                                   : op == CollectiveOp::kAllReduceMin ? kernels::Combine::kMin
                                                                       : kernels::Combine::kSum;
  if (gather) {
    const std::size_t m = in.size();
    if (small) {
      for (std::size_t i = 0; i < uk; ++i)
        if (m) std::memcpy(out.data() + i * m, sub_srcs_[i], m * sizeof(float));
      return;
    }
    for (std::size_t i = 0; i < uk; ++i)  // this member's block into each subgroup output
      if (m) std::memcpy(sub_dsts_[i] + pos * m, in.data(), m * sizeof(float));
    finish_direct();
    return;
  }
  if (scatter) {
    const std::size_t m = out.size();
    for (std::size_t i = 0; i < uk; ++i) sub_srcs_[i] += pos * m;
    kernels::fold_sum(sub_srcs_.data(), k, out.data(), 0, m);
    if (!small) finish_direct();
    return;
  }
  if (small) {
    kernels::fold(combine, sub_srcs_.data(), k, out.data(), 0, out.size());
  } else {
    // This member's slice of the subgroup's fold, written to all k outputs (see PROTOCOL).
    const std::size_t lo = out.size() * pos / uk, hi = out.size() * (pos + 1) / uk;
    kernels::fold_to_all(combine, sub_srcs_.data(), k, sub_dsts_.data(), k, lo, hi,
                         kernels::FoldPath::kInterleaved);
    finish_direct();
  }
  if (op == CollectiveOp::kAllReduceMean) {
    const auto n = static_cast<float>(k);
    for (float& v : out) v /= n;  // every member divides the same bits the same way
  }
}

}  // namespace meshrun
