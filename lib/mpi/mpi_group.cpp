#include "mpi/mpi_group.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string_view>

#include "collectives/kernels.hpp"
#include "support/errors.hpp"

namespace meshrun {

namespace {
// Message tags on the data communicator. Chain chunks of consecutive calls cannot be confused:
// MPI never lets a message overtake an earlier one with the same source, tag and communicator.
constexpr int kChainTag = 1;
constexpr int kGatherTag = 2;
constexpr int kPermuteTag = 16;  // + the receiving device's global id
// The header in front of every gathered block and chain chunk: op, element count, sequence
// number and permutation hash, 4 x 64 bits carried as 8 floats (MPI copies them bit for bit).
constexpr std::size_t kHdr = 8;
// Abort notices: at most this many characters of the reason.
constexpr int kNoticeMax = 1024;
// A cross-rank wait re-tests between sched_yield calls for this long, then sleeps between tests.
constexpr auto kYieldFor = std::chrono::microseconds(200);
constexpr auto kSleep = std::chrono::microseconds(50);
// The watcher polls the notice channel (and the local abort flag) this often.
constexpr auto kWatchEvery = std::chrono::milliseconds(1);

std::uint64_t hash_table(std::span<const int> t) {
  return std::hash<std::string_view>{}(
      std::string_view(reinterpret_cast<const char*>(t.data()), t.size_bytes()));
}

int as_int(std::size_t v) {
  MESHRUN_CHECK(v <= static_cast<std::size_t>(INT32_MAX), "MPI message larger than 2^31 elements");
  return static_cast<int>(v);
}

std::string ms(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }
}  // namespace

// ---------------------------------------------------------------- abort channel

MpiAbortChannel::MpiAbortChannel(MPI_Comm comm, std::chrono::milliseconds timeout,
                                 const std::string& what) {
  MPI_Comm_size(comm, &ranks_);
  MPI_Comm_rank(comm, &rank_);
  MPI_Request dup;
  MPI_Comm_idup(comm, &notices_, &dup);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int done = 0;;) {
    MPI_Test(&dup, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if (std::chrono::steady_clock::now() >= deadline)
      throw TimeoutError(what + " (rank " + std::to_string(rank_) + " of " +
                             std::to_string(ranks_) + "): timed out after " + ms(timeout) +
                             " waiting for every rank to create the group",
                         {});
    std::this_thread::sleep_for(kSleep);
  }
  MPI_Comm_set_errhandler(notices_, MPI_ERRORS_RETURN);
  watcher_ = std::jthread([this](const std::stop_token& stop) { watch(stop); });
}

MpiAbortChannel::~MpiAbortChannel() {
  stop();
  MPI_Comm_free(&notices_);
}

void MpiAbortChannel::stop() {
  if (!watcher_.joinable()) return;
  watcher_.request_stop();
  watcher_.join();
}

void MpiAbortChannel::abort(const std::string& reason) {
  std::lock_guard lock(mu_);
  if (reason_.empty()) reason_ = reason;
  aborted_.store(true, std::memory_order_release);
  for (auto& [id, release] : listeners_) release();
}

std::string MpiAbortChannel::reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

std::string MpiAbortChannel::reason_soon() const {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    std::string r = reason();
    if (!r.empty() || std::chrono::steady_clock::now() >= until) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

int MpiAbortChannel::listen(std::function<void()> release) {
  std::lock_guard lock(mu_);
  if (aborted()) release();
  listeners_.emplace_back(next_id_, std::move(release));
  return next_id_++;
}

void MpiAbortChannel::forget(int id) {
  std::lock_guard lock(mu_);
  std::erase_if(listeners_, [id](const auto& l) { return l.first == id; });
}

// The watcher: keeps one receive posted for a notice from any rank; sends this rank's own reason,
// once, to every other rank when it aborts for a reason of its own.
void MpiAbortChannel::watch(const std::stop_token& stop) {
  std::vector<char> notice(kNoticeMax);
  MPI_Request incoming = MPI_REQUEST_NULL;
  MPI_Irecv(notice.data(), kNoticeMax, MPI_CHAR, MPI_ANY_SOURCE, 0, notices_, &incoming);
  bool told = false;
  for (;;) {
    const bool last_round = stop.stop_requested();
    int got = 0;
    MPI_Status st;
    if (incoming != MPI_REQUEST_NULL && MPI_Test(&incoming, &got, &st) == MPI_SUCCESS && got) {
      int len = 0;
      MPI_Get_count(&st, MPI_CHAR, &len);
      {
        std::lock_guard lock(mu_);
        if (reason_.empty()) remote_ = true;
      }
      abort(std::string(notice.data(), static_cast<std::size_t>(std::max(len, 0))));
    }
    if (aborted() && !told) {
      told = true;
      tell_other_ranks();
    }
    if (last_round) break;
    std::this_thread::sleep_for(kWatchEvery);
  }
  if (incoming != MPI_REQUEST_NULL) {
    MPI_Cancel(&incoming);
    MPI_Wait(&incoming, MPI_STATUS_IGNORE);
  }
}

void MpiAbortChannel::tell_other_ranks() {
  std::string text;
  {
    std::lock_guard lock(mu_);
    if (remote_) return;  // the rank that failed told everyone itself
    text = reason_.substr(0, kNoticeMax);
  }
  // Best effort, bounded: a dead rank never takes its notice; its request is let go.
  std::vector<MPI_Request> sends;
  for (int r = 0; r < ranks_; ++r) {
    if (r == rank_) continue;
    sends.emplace_back();
    MPI_Isend(text.data(), as_int(text.size()), MPI_CHAR, r, 0, notices_, &sends.back());
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  int done = 0;
  while (!done && std::chrono::steady_clock::now() < until) {
    MPI_Testall(static_cast<int>(sends.size()), sends.data(), &done, MPI_STATUSES_IGNORE);
    if (!done) std::this_thread::sleep_for(kWatchEvery);
  }
  for (MPI_Request& r : sends)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

// ---------------------------------------------------------------- group

namespace {
// One axis: member g is device g, on rank g / k.
MpiMembers one_axis(MPI_Comm comm, int k) {
  MESHRUN_CHECK(k >= 1, "a rank needs at least one device");
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  MpiMembers m;
  for (int g = 0; g < ranks * k; ++g) {
    m.device.push_back(g);
    m.owner.push_back(g / k);
  }
  return m;
}
}  // namespace

MpiGroup::MpiGroup(MPI_Comm comm, int local_devices, std::string axis, MpiOptions options)
    : MpiGroup(comm, one_axis(comm, local_devices), std::move(axis), options, nullptr) {}

MpiGroup::MpiGroup(MPI_Comm comm, MpiMembers members, std::string axis, MpiOptions options,
                   std::shared_ptr<MpiAbortChannel> channel)
    : axis_(std::move(axis)),
      options_(options),
      device_(std::move(members.device)),
      owner_(std::move(members.owner)),
      channel_(std::move(channel)) {
  MESHRUN_CHECK(options.window >= 1 && options.chunk_bytes >= sizeof(float),
                "MpiOptions: window and chunk_bytes must be positive");
  int level = 0;
  MPI_Query_thread(&level);
  MESHRUN_CHECK(level == MPI_THREAD_MULTIPLE, "the MPI backend needs MPI_THREAD_MULTIPLE");
  MPI_Comm_size(comm, &ranks_);
  MPI_Comm_rank(comm, &rank_);
  // The layout, and the MPI_COMM_WORLD rank of each rank of comm (messages name those).
  MESHRUN_CHECK(!device_.empty() && device_.size() == owner_.size(),
                "MpiMembers: one owner per member");
  hosted_.resize(static_cast<std::size_t>(ranks_));
  for (std::size_t g = 0; g < owner_.size(); ++g) {
    const int q = owner_[g];
    MESHRUN_CHECK(q >= 0 && q < ranks_, "MpiMembers: an owner outside the communicator");
    auto& h = hosted_[static_cast<std::size_t>(q)];
    place_.push_back(static_cast<int>(h.size()));
    h.push_back(static_cast<int>(g));
  }
  int next = 0;
  for (const auto& h : hosted_) {
    MESHRUN_CHECK(!h.empty(), "MpiMembers: a rank of the communicator hosts no member");
    for (int g : h) runs_ = runs_ && g == next++;
  }
  mine_ = hosted_[static_cast<std::size_t>(rank_)];
  local_ = static_cast<int>(mine_.size());
  world_.resize(static_cast<std::size_t>(ranks_));
  {
    MPI_Group mine, all;
    MPI_Comm_group(comm, &mine);
    MPI_Comm_group(MPI_COMM_WORLD, &all);
    std::vector<int> ids(static_cast<std::size_t>(ranks_));
    for (int q = 0; q < ranks_; ++q) ids[static_cast<std::size_t>(q)] = q;
    MPI_Group_translate_ranks(mine, ranks_, ids.data(), all, world_.data());
    MPI_Group_free(&mine);
    MPI_Group_free(&all);
  }
  std::vector<int> local_ids;
  for (int g : mine_) local_ids.push_back(device_[static_cast<std::size_t>(g)]);
  arrive_ = std::make_unique<InProcessGroup>(local_, axis_,
                                             GroupOptions{.timeout = options.timeout}, local_ids);
  // The leader spends up to one timeout across ranks between the two barriers and reports it
  // itself; the devices waiting for it must not report the leader first.
  release_ = std::make_unique<InProcessGroup>(
      local_, axis_, GroupOptions{.timeout = 2 * options.timeout + std::chrono::seconds(1)},
      local_ids);
  slots_.resize(static_cast<std::size_t>(local_));
  if (!channel_)
    channel_ = std::make_shared<MpiAbortChannel>(comm, options_.timeout, where(current_));
  // A private data communicator, duplicated without blocking: a rank that never arrives is a
  // timeout here too.
  deadline_ = Clock::now() + options_.timeout;
  MPI_Request dup;
  check_mpi(MPI_Comm_idup(comm, &data_, &dup), "MPI_Comm_idup");
  wait({&dup, 1}, "every rank to create the group", -1);  // peers_ is empty: no rank named
  MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
  listener_ = channel_->listen([this] {  // last: a constructor that throws leaves no listener
    arrive_->abort();
    release_->abort();
  });
  for (int j = 0; j < local_; ++j) members_.push_back(std::make_unique<MpiCommunicator>(*this, j));
}

MpiGroup::~MpiGroup() {
  channel_->forget(listener_);
  if (aborted()) (void)buf_.release();  // requests of the failed call may still use them
  if (data_ != MPI_COMM_NULL) MPI_Comm_free(&data_);
}

MpiCommunicator& MpiGroup::member(int local) {
  MESHRUN_CHECK(local >= 0 && local < local_, "local device out of range");
  return *members_[static_cast<std::size_t>(local)];
}

// ---------------------------------------------------------------- waiting, errors

void MpiGroup::check_mpi(int rc, const char* call) const {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CollectiveError(where(current_) + ": " + call + " failed: " + std::string(text, len));
}

void MpiGroup::wait(std::span<MPI_Request> reqs, const char* what, int peer) {
  const auto start = Clock::now();
  for (;;) {
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE),
              "MPI_Testall");
    if (done) return;
    if (aborted()) throw AbortedError(where(current_) + ": aborted: " + reason());
    const auto now = Clock::now();
    if (now >= deadline_) timed_out(reqs, what, peer);
    if (now - start < kYieldFor) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(kSleep);
    }
  }
}

void MpiGroup::timed_out(std::span<MPI_Request> reqs, const char* what, int peer) {
  // The ranks still owing a message: `peer`, or those of the requests still pending.
  std::vector<int> late;
  if (peer >= 0) late.push_back(peer);
  if (peer < 0 && peers_.size() == reqs.size()) {
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      int done = 0;
      MPI_Request_get_status(reqs[i], &done, MPI_STATUS_IGNORE);
      if (!done && std::find(late.begin(), late.end(), peers_[i]) == late.end())
        late.push_back(peers_[i]);
    }
  }
  std::string who = what;
  std::vector<int> missing;
  for (int r : late) {
    who += (r == late.front() ? " rank " : ", rank ") + std::to_string(world(r)) + " (" +
           devices_of(r) + ")";
    for (int g : hosted_[static_cast<std::size_t>(r)])
      missing.push_back(device_[static_cast<std::size_t>(g)]);
  }
  throw TimeoutError(
      where(current_) + ": timed out after " + ms(options_.timeout) + " waiting for " + who,
      missing);
}

std::string MpiGroup::where(const Desc& d) const {
  const std::string what = d.seq == 0 ? std::string("creating the group")  // before any call
                                      : std::string(op_name(d.op)) + " #" + std::to_string(d.seq);
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  return what + " on '" + axis_ + "' (rank " + std::to_string(world_rank) + " of " +
         std::to_string(world_size) + ")";
}

// "device 3", "devices 4-7" (consecutive), "devices 1, 5".
std::string MpiGroup::devices_of(int rank) const {
  std::vector<int> ids;
  for (int g : hosted_[static_cast<std::size_t>(rank)])
    ids.push_back(device_[static_cast<std::size_t>(g)]);
  if (ids.size() == 1) return "device " + std::to_string(ids[0]);
  bool consecutive = true;
  for (std::size_t i = 1; i < ids.size(); ++i)
    consecutive = consecutive && ids[i] == ids[i - 1] + 1;
  if (consecutive)
    return "devices " + std::to_string(ids.front()) + "-" + std::to_string(ids.back());
  std::string s = "devices ";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s;
}

void MpiGroup::check_header(const float* header, const Desc& d, int from) const {
  std::uint64_t h[4];
  std::memcpy(h, header, sizeof h);
  if (h[0] == static_cast<std::uint64_t>(d.op) && h[1] == d.in_count && h[2] == d.seq &&
      h[3] == d.perm_hash)
    return;
  const Desc other{static_cast<CollectiveOp>(h[0]), h[1], 0, h[2], h[3]};
  auto show = [](const Desc& x) {
    return std::string(op_name(x.op)) + " #" + std::to_string(x.seq) + " with " +
           std::to_string(x.in_count) + " elements";
  };
  throw CollectiveError("mismatched collectives on '" + axis_ + "': rank " +
                        std::to_string(world(rank_)) + " (" + devices_of(rank_) + ") called " +
                        show(d) + ", rank " + std::to_string(world(from)) + " (" +
                        devices_of(from) + ") called " + show(other));
}

namespace {
void write_header(float* dst, CollectiveOp op, std::uint64_t count, std::uint64_t seq,
                  std::uint64_t hash) {
  const std::uint64_t h[4] = {static_cast<std::uint64_t>(op), count, seq, hash};
  std::memcpy(dst, h, sizeof h);
}
}  // namespace

// ---------------------------------------------------------------- step 2, on the leader

void MpiGroup::cross(const Desc& d) {
  current_ = d;
  deadline_ = Clock::now() + options_.timeout;
  for (int j = 1; j < local_; ++j) {
    const Desc& o = slots_[static_cast<std::size_t>(j)].desc;
    if (o == d) continue;
    throw CollectiveError("mismatched collectives on '" + axis_ + "': device " +
                          std::to_string(member_device(0)) + " called " + op_name(d.op) + " #" +
                          std::to_string(d.seq) + " with " + std::to_string(d.in_count) +
                          " elements, device " + std::to_string(member_device(j)) + " called " +
                          op_name(o.op) + " #" + std::to_string(o.seq) + " with " +
                          std::to_string(o.in_count) + " elements");
  }
  const int n = size();
  const auto k = static_cast<std::size_t>(local_);
  // The chain needs each rank's members to be the next terms of the fold.
  const bool small = d.in_count * sizeof(float) <= options_.gather_max_bytes || !runs_;
  srcs_.resize(static_cast<std::size_t>(n) + 1);
  dsts_.resize(k);
  for (std::size_t j = 0; j < k; ++j) dsts_[j] = slots_[j].out;
  switch (d.op) {
    case CollectiveOp::kAllGather: {
      gather(d);
      const std::size_t m = d.in_count;
      for (std::size_t j = 0; j < k; ++j)
        for (int g = 0; g < n; ++g)
          if (m)
            std::memcpy(dsts_[j] + static_cast<std::size_t>(g) * m, gathered(g), m * sizeof(float));
      return;
    }
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kAllReduceMean:
      if (small) {
        gather(d);
        for (int g = 0; g < n; ++g) srcs_[static_cast<std::size_t>(g)] = gathered(g);
        kernels::fold_sum_to_all(srcs_.data(), n, dsts_.data(), local_, 0, d.in_count, false);
      } else {
        chain(d, d.in_count, /*broadcast=*/true);
      }
      return;
    case CollectiveOp::kReduceScatter: {
      const std::size_t m = d.out_count;
      if (small) {
        gather(d);
        for (std::size_t j = 0; j < k; ++j) {
          const std::size_t offset = static_cast<std::size_t>(member_rank(static_cast<int>(j))) * m;
          for (int g = 0; g < n; ++g) srcs_[static_cast<std::size_t>(g)] = gathered(g) + offset;
          kernels::fold_sum(srcs_.data(), n, dsts_[j], 0, m);
        }
        return;
      }
      chain(d, d.in_count, /*broadcast=*/false);
      // The last rank holds the whole sum; each rank gets its members' blocks (consecutive:
      // the chain runs only when every rank's members are).
      std::vector<float>& recv = buf_->recv;
      recv.resize(k * m);
      std::vector<int> counts, displs;
      for (const auto& h : hosted_) {
        counts.push_back(as_int(h.size() * m));
        displs.push_back(as_int(static_cast<std::size_t>(h.front()) * m));
      }
      MPI_Request req;
      check_mpi(MPI_Iscatterv(buf_->result.data(), counts.data(), displs.data(), MPI_FLOAT,
                              recv.data(), as_int(k * m), MPI_FLOAT, ranks_ - 1, data_, &req),
                "MPI_Iscatterv");
      wait({&req, 1}, "the scattered sum from", ranks_ - 1);
      for (std::size_t j = 0; j < k; ++j)
        if (m) std::memcpy(dsts_[j], recv.data() + j * m, m * sizeof(float));
      return;
    }
    case CollectiveOp::kPermute:
      permute(d);
      return;
  }
}

void MpiGroup::gather(const Desc& d) {
  const std::size_t m = d.in_count, k = static_cast<std::size_t>(local_);
  std::vector<float>&send = buf_->send, &recv = buf_->recv;
  count_ = m;
  block_at_.resize(static_cast<std::size_t>(ranks_) + 1);
  block_at_[0] = 0;
  for (std::size_t q = 0; q < hosted_.size(); ++q)
    block_at_[q + 1] = block_at_[q] + kHdr + hosted_[q].size() * m;
  const std::size_t block = kHdr + k * m;
  send.resize(block);
  write_header(send.data(), d.op, d.in_count, d.seq, d.perm_hash);
  for (std::size_t j = 0; j < k; ++j)
    if (m) std::memcpy(send.data() + kHdr + j * m, slots_[j].in, m * sizeof(float));
  recv.resize(block_at_.back());
  // One round of point-to-point messages, every rank to every rank: each rank only has to run
  // once to post its sends, where a tree or ring allgather needs log R or R-1 dependent rounds,
  // each waiting for a process that may not hold a core (8 ranks on 2 cores).
  reqs_.clear();
  peers_.clear();
  for (int q = 0; q < ranks_; ++q) {
    const auto at = static_cast<std::size_t>(q);
    float* const theirs = recv.data() + block_at_[at];
    if (q == rank_) {
      std::memcpy(theirs, send.data(), block * sizeof(float));
      continue;
    }
    reqs_.emplace_back();
    peers_.push_back(q);
    check_mpi(MPI_Irecv(theirs, as_int(block_at_[at + 1] - block_at_[at]), MPI_FLOAT, q, kGatherTag,
                        data_, &reqs_.back()),
              "MPI_Irecv");
    reqs_.emplace_back();
    peers_.push_back(q);
    check_mpi(MPI_Isend(send.data(), as_int(block), MPI_FLOAT, q, kGatherTag, data_, &reqs_.back()),
              "MPI_Isend");
  }
  wait(reqs_, "the inputs of", -1);
  for (int q = 0; q < ranks_; ++q)
    check_header(recv.data() + block_at_[static_cast<std::size_t>(q)], d, q);
}

const float* MpiGroup::gathered(int member) const {
  const auto g = static_cast<std::size_t>(member);
  return buf_->recv.data() + block_at_[static_cast<std::size_t>(owner_[g])] + kHdr +
         static_cast<std::size_t>(place_[g]) * count_;
}

void MpiGroup::chain(const Desc& d, std::size_t count, bool broadcast) {
  const std::size_t chunk = std::max<std::size_t>(1, options_.chunk_bytes / sizeof(float));
  const std::size_t chunks = std::max<std::size_t>(1, (count + chunk - 1) / chunk);
  const auto w = static_cast<std::size_t>(options_.window);
  const bool first = rank_ == 0, last = rank_ == ranks_ - 1;
  Buffers& b = *buf_;
  b.chain_in.resize(w);
  b.chain_out.resize(w);
  for (std::size_t s = 0; s < w; ++s) {
    b.chain_in[s].resize(kHdr + chunk);
    b.chain_out[s].resize(kHdr + chunk);
  }
  b.result.resize(count);
  // reqs_: [0, w) receives from rank-1, [w, 2w) sends to rank+1, then one broadcast per chunk.
  reqs_.assign(2 * w + (broadcast ? chunks : 0), MPI_REQUEST_NULL);
  MPI_Request* const recvs = reqs_.data();
  MPI_Request* const sends = recvs + w;
  MPI_Request* const bcasts = sends + w;
  auto post_recv = [&](std::size_t c) {
    if (first || c >= chunks) return;
    check_mpi(MPI_Irecv(b.chain_in[c % w].data(), as_int(kHdr + chunk), MPI_FLOAT, rank_ - 1,
                        kChainTag, data_, &recvs[c % w]),
              "MPI_Irecv");
  };
  for (std::size_t c = 0; c < std::min(w, chunks); ++c) post_recv(c);

  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t s = c % w, lo = c * chunk, len = std::min(count, lo + chunk) - lo;
    int ns = 0;
    if (!first) {
      wait({&recvs[s], 1}, "the running sum from", rank_ - 1);
      check_header(b.chain_in[s].data(), d, rank_ - 1);
      srcs_[static_cast<std::size_t>(ns++)] = b.chain_in[s].data() + kHdr;
    }
    for (std::size_t j = 0; j < static_cast<std::size_t>(local_); ++j)
      srcs_[static_cast<std::size_t>(ns++)] = slots_[j].in + lo;
    if (last) {
      kernels::fold_sum(srcs_.data(), ns, b.result.data() + lo, 0, len);
    } else {
      wait({&sends[s], 1}, "its earlier chunk to be taken by", rank_ + 1);
      float* const out = b.chain_out[s].data();
      kernels::fold_sum(srcs_.data(), ns, out + kHdr, 0, len);
      write_header(out, d.op, d.in_count, d.seq, d.perm_hash);
      check_mpi(
          MPI_Isend(out, as_int(kHdr + len), MPI_FLOAT, rank_ + 1, kChainTag, data_, &sends[s]),
          "MPI_Isend");
    }
    post_recv(c + w);
    if (broadcast && ranks_ > 1)
      check_mpi(
          MPI_Ibcast(b.result.data() + lo, as_int(len), MPI_FLOAT, ranks_ - 1, data_, &bcasts[c]),
          "MPI_Ibcast");
  }
  wait({sends, w}, "the last chunks to be taken by", rank_ + 1);
  if (!broadcast) return;
  // The result streams in chunk by chunk; each goes to the k outputs as soon as it is complete.
  for (std::size_t c = 0; c < chunks; ++c) {
    wait({&bcasts[c], 1}, "the result broadcast from", ranks_ - 1);
    const std::size_t lo = c * chunk, len = std::min(count, lo + chunk) - lo;
    for (std::size_t j = 0; j < static_cast<std::size_t>(local_); ++j)
      if (len) std::memcpy(slots_[j].out + lo, b.result.data() + lo, len * sizeof(float));
  }
}

void MpiGroup::permute(const Desc& d) {
  const std::size_t m = d.in_count, k = static_cast<std::size_t>(local_);
  const int n = size();
  const std::span<const int> source_of = slots_[0].source_of;
  auto owner = [&](int g) { return owner_[static_cast<std::size_t>(g)]; };
  auto place = [&](int g) { return static_cast<std::size_t>(place_[static_cast<std::size_t>(g)]); };
  std::vector<float>&send = buf_->send, &recv = buf_->recv;
  send.resize(k * m);  // copies of the k local inputs, for the messages to other ranks
  recv.resize(k * m);  // one slot per local member, for what comes from other ranks
  reqs_.clear();
  peers_.clear();
  for (std::size_t j = 0; j < k; ++j) {
    if (m) std::memcpy(send.data() + j * m, slots_[j].in, m * sizeof(float));
    const int g = mine_[j], src = source_of[static_cast<std::size_t>(g)];
    if (src >= 0 && owner(src) != rank_) {
      reqs_.emplace_back();
      peers_.push_back(owner(src));
      check_mpi(MPI_Irecv(recv.data() + j * m, as_int(m), MPI_FLOAT, owner(src), kPermuteTag + g,
                          data_, &reqs_.back()),
                "MPI_Irecv");
    }
  }
  for (int g = 0; g < n; ++g) {
    const int src = source_of[static_cast<std::size_t>(g)];
    if (owner(g) == rank_ || src < 0 || owner(src) != rank_) continue;
    reqs_.emplace_back();
    peers_.push_back(owner(g));
    check_mpi(MPI_Isend(send.data() + place(src) * m, as_int(m), MPI_FLOAT, owner(g),
                        kPermuteTag + g, data_, &reqs_.back()),
              "MPI_Isend");
  }
  wait(reqs_, "the ppermute messages of", -1);
  for (std::size_t j = 0; j < k; ++j) {
    const int src = source_of[static_cast<std::size_t>(mine_[j])];
    float* const out = slots_[j].out;
    if (src < 0) {
      std::fill(out, out + m, 0.0f);
    } else if (m) {
      const bool remote = owner(src) != rank_;
      std::memcpy(out, remote ? recv.data() + j * m : send.data() + place(src) * m,
                  m * sizeof(float));
    }
  }
}

// ---------------------------------------------------------------- the communicator

void MpiCommunicator::barrier(InProcessGroup& g, const MpiGroup::Desc& d) {
  try {
    g.member(local_).all_reduce_sum({}, {});
  } catch (const TimeoutError& e) {
    std::vector<int> missing;
    std::string list;
    for (int device : e.missing()) {  // the barriers name members by device already
      missing.push_back(device);
      list += (list.empty() ? "" : ", ") + std::to_string(missing.back());
    }
    const std::string msg = group_.where(d) + ": timed out after " + ms(group_.options_.timeout) +
                            "; device(s) " + list + " never arrived";
    group_.abort(msg);
    throw TimeoutError(msg, missing);
  } catch (const AbortedError& e) {
    const std::string why = group_.reason_soon();
    throw AbortedError(group_.where(d) + ": aborted: " + (why.empty() ? e.what() : why));
  }
}

void MpiCommunicator::run(CollectiveOp op, std::span<const float> in, std::span<float> out,
                          std::span<const int> source_of) {
  const MpiGroup::Desc d{op, in.size(), out.size(), ++seq_,
                         op == CollectiveOp::kPermute ? hash_table(source_of) : 0};
  op_ = op;
  if (group_.aborted())
    throw AbortedError(group_.where(d) + ": the group was aborted: " + group_.reason());
  group_.slots_[static_cast<std::size_t>(local_)] = {d, in.data(), out.data(), source_of};
  barrier(*group_.arrive_, d);
  if (local_ == 0) {
    try {
      group_.cross(d);
    } catch (const std::exception& e) {
      group_.abort(e.what());  // keeps an earlier reason (a remote notice) if there is one
      throw;
    }
  }
  barrier(*group_.release_, d);
}

void MpiCommunicator::all_reduce_sum(std::span<const float> in, std::span<float> out) {
  MESHRUN_CHECK(in.size() == out.size(), "psum: input and output differ in size");
  run(CollectiveOp::kAllReduce, in, out);
}

void MpiCommunicator::all_reduce_mean(std::span<const float> in, std::span<float> out) {
  MESHRUN_CHECK(in.size() == out.size(), "pmean: input and output differ in size");
  run(CollectiveOp::kAllReduceMean, in, out);
  const auto n = static_cast<float>(group_.size());
  for (float& v : out) v /= n;
}

void MpiCommunicator::all_gather(std::span<const float> in, std::span<float> out) {
  MESHRUN_CHECK(out.size() == static_cast<std::size_t>(group_.size()) * in.size(),
                "all_gather: output is not n times the input");
  run(CollectiveOp::kAllGather, in, out);
}

void MpiCommunicator::reduce_scatter_sum(std::span<const float> in, std::span<float> out) {
  MESHRUN_CHECK(in.size() == static_cast<std::size_t>(group_.size()) * out.size(),
                "psum_scatter: input is not n times the output");
  run(CollectiveOp::kReduceScatter, in, out);
}

void MpiCommunicator::permute(std::span<const float> in, std::span<float> out,
                              std::span<const int> source_of) {
  MESHRUN_CHECK(in.size() == out.size(), "ppermute: input and output differ in size");
  MESHRUN_CHECK(source_of.size() == static_cast<std::size_t>(group_.size()),
                "ppermute: the source table needs one entry per device");
  run(CollectiveOp::kPermute, in, out, source_of);
}

}  // namespace meshrun
