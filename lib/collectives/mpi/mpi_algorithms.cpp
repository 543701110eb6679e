// Step 2 of mpi_group.hpp's protocol, on each group's leader: the exchanges across ranks.
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string_view>

#include "collectives/kernels.hpp"
#include "collectives/mpi/mpi_group.hpp"
#include "collectives/mpi/mpi_group_detail.hpp"
#include "support/errors.hpp"

namespace meshrun {

using namespace mpi_detail;

namespace {
// The fold of a reduction's op (psum_scatter's and pmean's is the sum).
kernels::Combine combine_of(CollectiveOp op) {
  if (op == CollectiveOp::kAllReduceMax) return kernels::Combine::kMax;
  if (op == CollectiveOp::kAllReduceMin) return kernels::Combine::kMin;
  return kernels::Combine::kSum;
}
}  // namespace

// ---------------------------------------------------------------- step 2, on the leader

void MpiGroup::cross(const Desc& d) {
  current_ = d;
  deadline_ = Clock::now() + options_.timeout;
  for (int j = 1; j < local_; ++j) {
    const Desc& o = slots_[static_cast<std::size_t>(j)].desc;
    if (o == d) continue;
    throw CollectiveError(
        "mismatched collectives on '" + axis_ + "': device " + std::to_string(member_device(0)) +
        " called " + describe(d) + ", device " + std::to_string(member_device(j)) + " called " +
        describe(o) +
        (o.op == d.op && o.in_count == d.in_count && o.subgroup == d.subgroup
             ? (d.subgroup != 0 ? " (from another place of the program, or other groups)"
                                : " (from another place of the program)")
             : ""));
  }
  const int n = size();
  const auto k = static_cast<std::size_t>(local_);
  // The chain needs each rank's members to be the next terms of the fold.
  const bool small = d.in_count * sizeof(float) <= options_.gather_max_bytes || !runs_;
  srcs_.resize(static_cast<std::size_t>(n) + 1);
  dsts_.resize(k);
  for (std::size_t j = 0; j < k; ++j) dsts_[j] = slots_[j].out;
  if (d.subgroup != 0) {
    grouped(d, *slots_[0].groups);
    return;
  }
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
    case CollectiveOp::kAllReduceMax:
    case CollectiveOp::kAllReduceMin:
      if (small) {
        gather(d);
        for (int g = 0; g < n; ++g) srcs_[static_cast<std::size_t>(g)] = gathered(g);
        kernels::fold_to_all(combine_of(d.op), srcs_.data(), n, dsts_.data(), local_, 0, d.in_count,
                             kernels::FoldPath::kInterleaved);
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

// axis_index_groups: always the gather path (every rank gets every input), then each local member
// folds (or concatenates, or folds its block of) its own subgroup's inputs in the subgroup's
// listed order -- the in-process engine's fold, so the same bits whatever R.
void MpiGroup::grouped(const Desc& d, const IndexGroups& groups) {
  gather(d);
  const auto k = static_cast<std::size_t>(groups.subgroup_size());
  const kernels::Combine combine = combine_of(d.op);
  for (std::size_t j = 0; j < static_cast<std::size_t>(local_); ++j) {
    const int g = mine_[j];
    const std::span<const int> sub = groups.of(g);
    for (std::size_t i = 0; i < k; ++i) srcs_[i] = gathered(sub[i]);
    switch (d.op) {
      case CollectiveOp::kAllGather: {
        const std::size_t m = d.in_count;
        for (std::size_t i = 0; i < k; ++i)
          if (m) std::memcpy(dsts_[j] + i * m, srcs_[i], m * sizeof(float));
        break;
      }
      case CollectiveOp::kReduceScatter: {
        const std::size_t m = d.out_count;
        const auto offset = static_cast<std::size_t>(groups.position(g)) * m;
        for (std::size_t i = 0; i < k; ++i) srcs_[i] += offset;
        kernels::fold_sum(srcs_.data(), static_cast<int>(k), dsts_[j], 0, m);
        break;
      }
      default:
        kernels::fold(combine, srcs_.data(), static_cast<int>(k), dsts_[j], 0, d.in_count);
        break;
    }
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
  write_header(send.data(), op_word(d.op, d.subgroup), d.in_count, d.seq, d.perm_hash);
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
    // The running fold P continues as the first source: a max or min is never NaN, so folding
    // P again from -inf (+inf) gives P (kernels.hpp).
    const kernels::Combine op = combine_of(d.op);
    if (last) {
      kernels::fold(op, srcs_.data(), ns, b.result.data() + lo, 0, len);
    } else {
      wait({&sends[s], 1}, "its earlier chunk to be taken by", rank_ + 1);
      float* const out = b.chain_out[s].data();
      kernels::fold(op, srcs_.data(), ns, out + kHdr, 0, len);
      write_header(out, op_word(d.op, d.subgroup), d.in_count, d.seq, d.perm_hash);
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

}  // namespace meshrun
