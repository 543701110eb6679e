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

// ---------------------------------------------------------------- group

MpiGroup::MpiGroup(MPI_Comm comm, int local_devices, std::string axis, MpiOptions options)
    : local_(local_devices),
      axis_(std::move(axis)),
      options_(options),
      arrive_(local_devices, axis_, GroupOptions{.timeout = options.timeout}),
      // The leader spends up to one timeout across ranks between the two barriers and reports
      // it itself; the devices waiting for it must not report the leader first.
      release_(local_devices, axis_,
               GroupOptions{.timeout = 2 * options.timeout + std::chrono::seconds(1)}),
      slots_(static_cast<std::size_t>(local_devices)) {
  MESHRUN_CHECK(local_devices >= 1, "a rank needs at least one device");
  MESHRUN_CHECK(options.window >= 1 && options.chunk_bytes >= sizeof(float),
                "MpiOptions: window and chunk_bytes must be positive");
  int level = 0;
  MPI_Query_thread(&level);
  MESHRUN_CHECK(level == MPI_THREAD_MULTIPLE, "the MPI backend needs MPI_THREAD_MULTIPLE");
  MPI_Comm_size(comm, &ranks_);
  MPI_Comm_rank(comm, &rank_);
  // Two private communicators (data, notices), duplicated without blocking: a rank that never
  // arrives is a timeout here too.
  deadline_ = Clock::now() + options_.timeout;
  MPI_Request dup[2];
  check_mpi(MPI_Comm_idup(comm, &data_, &dup[0]), "MPI_Comm_idup");
  check_mpi(MPI_Comm_idup(comm, &notices_, &dup[1]), "MPI_Comm_idup");
  wait(dup, "every rank to create the group", -1);  // peers_ is empty: no rank named
  MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(notices_, MPI_ERRORS_RETURN);
  for (int j = 0; j < local_; ++j) members_.push_back(std::make_unique<MpiCommunicator>(*this, j));
  watcher_ = std::jthread([this](std::stop_token stop) { watch(stop); });
}

MpiGroup::~MpiGroup() {
  watcher_.request_stop();
  watcher_.join();
  if (aborted()) (void)buf_.release();  // requests of the failed call may still use them
  MPI_Comm_free(&data_);
  MPI_Comm_free(&notices_);
}

MpiCommunicator& MpiGroup::member(int local) {
  MESHRUN_CHECK(local >= 0 && local < local_, "local device out of range");
  return *members_[static_cast<std::size_t>(local)];
}

void MpiGroup::abort(const std::string& reason) {
  {
    std::lock_guard lock(reason_mu_);
    if (reason_.empty()) reason_ = reason;
  }
  aborted_.store(true, std::memory_order_release);
  arrive_.abort();
  release_.abort();
}

std::string MpiGroup::reason() const {
  std::lock_guard lock(reason_mu_);
  return reason_;
}

// The watcher: keeps one receive posted for a notice from any rank; sends this rank's own reason,
// once, to every other rank when it aborts for a reason of its own -- also when the abort comes
// just before the group is destroyed (the last round runs after the stop request).
void MpiGroup::watch(std::stop_token stop) {
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
        std::lock_guard lock(reason_mu_);
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

void MpiGroup::tell_other_ranks() {
  std::string text;
  {
    std::lock_guard lock(reason_mu_);
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
  const auto until = Clock::now() + std::chrono::seconds(1);
  int done = 0;
  while (!done && Clock::now() < until) {
    MPI_Testall(static_cast<int>(sends.size()), sends.data(), &done, MPI_STATUSES_IGNORE);
    if (!done) std::this_thread::sleep_for(kWatchEvery);
  }
  for (MPI_Request& r : sends)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
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
    who += (r == late.front() ? " rank " : ", rank ") + std::to_string(r) + " (" + devices_of(r) + ")";
    for (int j = 0; j < local_; ++j) missing.push_back(r * local_ + j);
  }
  throw TimeoutError(
      where(current_) + ": timed out after " + ms(options_.timeout) + " waiting for " + who,
      missing);
}

std::string MpiGroup::where(const Desc& d) const {
  const std::string what = d.seq == 0 ? std::string("creating the group")  // before any call
                                      : std::string(op_name(d.op)) + " #" + std::to_string(d.seq);
  return what + " on '" + axis_ + "' (rank " + std::to_string(rank_) + " of " +
         std::to_string(ranks_) + ")";
}

std::string MpiGroup::devices_of(int rank) const {
  const int a = rank * local_, b = a + local_ - 1;
  return a == b ? "device " + std::to_string(a)
                : "devices " + std::to_string(a) + "-" + std::to_string(b);
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
  throw CollectiveError("mismatched collectives on '" + axis_ + "': rank " + std::to_string(rank_) +
                        " (" + devices_of(rank_) + ") called " + show(d) + ", rank " +
                        std::to_string(from) + " (" + devices_of(from) + ") called " + show(other));
}

namespace {
void write_header(float* dst, CollectiveOp op, std::uint64_t count,
                  std::uint64_t seq, std::uint64_t hash) {
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
                          std::to_string(first_device()) + " called " + op_name(d.op) + " #" +
                          std::to_string(d.seq) + " with " + std::to_string(d.in_count) +
                          " elements, device " + std::to_string(first_device() + j) + " called " +
                          op_name(o.op) + " #" + std::to_string(o.seq) + " with " +
                          std::to_string(o.in_count) + " elements");
  }
  const int n = size();
  const auto k = static_cast<std::size_t>(local_);
  const bool small = d.in_count * sizeof(float) <= options_.gather_max_bytes;
  srcs_.resize(static_cast<std::size_t>(n) + 1);
  dsts_.resize(k);
  for (std::size_t j = 0; j < k; ++j) dsts_[j] = slots_[j].out;
  switch (d.op) {
    case CollectiveOp::kAllGather: {
      gather(d);
      const std::size_t m = d.in_count;
      for (std::size_t j = 0; j < k; ++j)
        for (int g = 0; g < n; ++g)
          if (m) std::memcpy(dsts_[j] + static_cast<std::size_t>(g) * m, gathered(g), m * sizeof(float));
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
          const std::size_t offset = (static_cast<std::size_t>(first_device()) + j) * m;
          for (int g = 0; g < n; ++g) srcs_[static_cast<std::size_t>(g)] = gathered(g) + offset;
          kernels::fold_sum(srcs_.data(), n, dsts_[j], 0, m);
        }
        return;
      }
      chain(d, d.in_count, /*broadcast=*/false);
      // The last rank holds the whole sum; each rank gets its k blocks.
      std::vector<float>& recv = buf_->recv;
      recv.resize(k * m);
      MPI_Request req;
      check_mpi(MPI_Iscatter(buf_->result.data(), as_int(k * m), MPI_FLOAT, recv.data(),
                             as_int(k * m), MPI_FLOAT, ranks_ - 1, data_, &req),
                "MPI_Iscatter");
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
  block_ = kHdr + k * m;
  send.resize(block_);
  write_header(send.data(), d.op, d.in_count, d.seq, d.perm_hash);
  for (std::size_t j = 0; j < k; ++j)
    if (m) std::memcpy(send.data() + kHdr + j * m, slots_[j].in, m * sizeof(float));
  recv.resize(block_ * static_cast<std::size_t>(ranks_));
  // One round of point-to-point messages, every rank to every rank: each rank only has to run
  // once to post its sends, where a tree or ring allgather needs log R or R-1 dependent rounds,
  // each waiting for a process that may not hold a core (8 ranks on 2 cores).
  reqs_.clear();
  peers_.clear();
  for (int q = 0; q < ranks_; ++q) {
    float* const block = recv.data() + static_cast<std::size_t>(q) * block_;
    if (q == rank_) {
      std::memcpy(block, send.data(), block_ * sizeof(float));
      continue;
    }
    reqs_.emplace_back();
    peers_.push_back(q);
    check_mpi(MPI_Irecv(block, as_int(block_), MPI_FLOAT, q, kGatherTag, data_, &reqs_.back()),
              "MPI_Irecv");
    reqs_.emplace_back();
    peers_.push_back(q);
    check_mpi(MPI_Isend(send.data(), as_int(block_), MPI_FLOAT, q, kGatherTag, data_, &reqs_.back()),
              "MPI_Isend");
  }
  wait(reqs_, "the inputs of", -1);
  for (int q = 0; q < ranks_; ++q)
    check_header(recv.data() + static_cast<std::size_t>(q) * block_, d, q);
}

const float* MpiGroup::gathered(int device) const {
  const auto q = static_cast<std::size_t>(device / local_), j = static_cast<std::size_t>(device % local_);
  const std::size_t m = (block_ - kHdr) / static_cast<std::size_t>(local_);
  return buf_->recv.data() + q * block_ + kHdr + j * m;
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
      check_mpi(MPI_Isend(out, as_int(kHdr + len), MPI_FLOAT, rank_ + 1, kChainTag, data_, &sends[s]),
                "MPI_Isend");
    }
    post_recv(c + w);
    if (broadcast && ranks_ > 1)
      check_mpi(MPI_Ibcast(b.result.data() + lo, as_int(len), MPI_FLOAT, ranks_ - 1, data_, &bcasts[c]),
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
  const int n = size(), first = first_device();
  const std::span<const int> source_of = slots_[0].source_of;
  std::vector<float>&send = buf_->send, &recv = buf_->recv;
  send.resize(k * m);  // copies of the k local inputs, for the messages to other ranks
  recv.resize(k * m);  // one slot per local device, for what comes from other ranks
  reqs_.clear();
  peers_.clear();
  for (std::size_t j = 0; j < k; ++j) {
    if (m) std::memcpy(send.data() + j * m, slots_[j].in, m * sizeof(float));
    const int src = source_of[static_cast<std::size_t>(first) + j];
    if (src >= 0 && src / local_ != rank_) {
      reqs_.emplace_back();
      peers_.push_back(src / local_);
      check_mpi(MPI_Irecv(recv.data() + j * m, as_int(m), MPI_FLOAT, src / local_,
                          kPermuteTag + first + static_cast<int>(j), data_, &reqs_.back()),
                "MPI_Irecv");
    }
  }
  for (int g = 0; g < n; ++g) {
    const int src = source_of[static_cast<std::size_t>(g)];
    if (g / local_ == rank_ || src < 0 || src / local_ != rank_) continue;
    reqs_.emplace_back();
    peers_.push_back(g / local_);
    check_mpi(MPI_Isend(send.data() + static_cast<std::size_t>(src - first) * m, as_int(m),
                        MPI_FLOAT, g / local_, kPermuteTag + g, data_, &reqs_.back()),
              "MPI_Isend");
  }
  wait(reqs_, "the ppermute messages of", -1);
  for (std::size_t j = 0; j < k; ++j) {
    const int src = source_of[static_cast<std::size_t>(first) + j];
    float* const out = slots_[j].out;
    if (src < 0) {
      std::fill(out, out + m, 0.0f);
    } else if (m) {
      const bool remote = src / local_ != rank_;
      std::memcpy(out, remote ? recv.data() + j * m : send.data() + static_cast<std::size_t>(src - first) * m,
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
    for (int j : e.missing()) {
      missing.push_back(group_.first_device() + j);
      list += (list.empty() ? "" : ", ") + std::to_string(missing.back());
    }
    const std::string msg = group_.where(d) + ": timed out after " + ms(group_.options_.timeout) +
                            "; device(s) " + list + " never arrived";
    group_.abort(msg);
    throw TimeoutError(msg, missing);
  } catch (const AbortedError&) {
    throw AbortedError(group_.where(d) + ": aborted: " + group_.reason());
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
  barrier(group_.arrive_, d);
  if (local_ == 0) {
    try {
      group_.cross(d);
    } catch (const std::exception& e) {
      group_.abort(e.what());  // keeps an earlier reason (a remote notice) if there is one
      throw;
    }
  }
  barrier(group_.release_, d);
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
