#include "collectives/mpi/mpi_group.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string_view>

#include "collectives/kernels.hpp"
#include "collectives/mpi/mpi_group_detail.hpp"
#include "support/errors.hpp"

namespace meshrun {

using namespace mpi_detail;

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
  if (!channel_) {
    channel_ = std::make_shared<MpiAbortChannel>(comm, options_.timeout, where(current_));
    own_channel_ = true;
  }
  // A private data communicator, duplicated without blocking: a rank that never arrives is a
  // timeout here too. An abort does not end this wait: the mesh's ranks build their groups one
  // after another, so a device of a rank done with them may fail (and abort the channel) while
  // another rank still builds its own. Were that rank to leave with an error here, it would
  // skip the job's next messages (its blocks, its outcome), and rank 0 would wait out the
  // timeout for an outcome that never comes (mpi_shard_map.hpp). Every rank of `comm` is on its
  // way here, so the wait ends at once -- or at the deadline if one died -- and the abort then
  // fails the group's first collective.
  deadline_ = Clock::now() + options_.timeout;
  MPI_Request dup;
  check_mpi(MPI_Comm_idup(comm, &data_, &dup), "MPI_Comm_idup");
  wait({&dup, 1}, "every rank to create the group", -1, true);  // peers_ empty: no rank named
  MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
  listener_ = channel_->listen([this] {  // last: a constructor that throws leaves no listener
    arrive_->abort();
    release_->abort();
  });
  for (int j = 0; j < local_; ++j) members_.push_back(std::make_unique<MpiCommunicator>(*this, j));
}

MpiGroup::~MpiGroup() {
  channel_->forget(listener_);
  // No other thread in MPI while data_ goes (mpi_group.hpp): a channel of the group's own ends
  // its watcher first, as MpiMesh stops a mesh's shared one before its groups go. A peer that
  // called one more collective may have sent to data_ before any abort was known here.
  if (own_channel_) channel_->stop();
  if (aborted()) {  // left to MPI_Finalize (mpi_group.hpp): messages may still come for them
    (void)buf_.release();
    return;
  }
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

void MpiGroup::wait(std::span<MPI_Request> reqs, const char* what, int peer, bool through_abort) {
  const auto start = Clock::now();
  for (;;) {
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE),
              "MPI_Testall");
    if (done) return;
    if (aborted() && !through_abort) throw AbortedError(where(current_) + ": aborted: " + reason());
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
                                      : collective_label(d.op, d.seq);
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

std::string MpiGroup::describe(const Desc& d) {
  std::string s =
      collective_label(d.op, d.seq) + " with " + std::to_string(d.in_count) + " elements";
  if (d.subgroup != 0) {
    s += " over axis_index_groups of " + std::to_string(d.subgroup) + " (table " +
         std::to_string(d.perm_hash % 100000) + ")";
  }
  return s;
}

void MpiGroup::check_header(const float* header, const Desc& d, int from) const {
  std::uint64_t h[4];
  std::memcpy(h, header, sizeof h);
  if (h[0] == op_word(d.op, d.subgroup) && h[1] == d.in_count && h[2] == d.seq &&
      h[3] == d.perm_hash)
    return;
  const Desc other{static_cast<CollectiveOp>(h[0] & 0xff), h[1], 0, h[2], h[3],
                   static_cast<std::uint32_t>(h[0] >> 8)};
  auto show = [&](const Desc& x) {
    return describe(x) +
           (x.op == other.op && x.in_count == other.in_count && x.subgroup == other.subgroup &&
                    x.perm_hash != other.perm_hash
                ? " (from another place of the program" +
                      std::string(x.op == CollectiveOp::kPermute ? ", or another permutation)"
                                  : x.subgroup != 0              ? ", or other groups)"
                                                                 : ")")
                : "");
  };
  throw CollectiveError("mismatched collectives on '" + axis_ + "': rank " +
                        std::to_string(world(rank_)) + " (" + devices_of(rank_) + ") called " +
                        show(d) + ", rank " + std::to_string(world(from)) + " (" +
                        devices_of(from) + ") called " + show(other));
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
                          std::span<const int> source_of, const IndexGroups* groups) {
  // The site (set_site) travels in the permutation's word: members that call from different
  // places of the program differ there as two permutations would (and a grouped call's groups).
  const std::uint64_t hash = op == CollectiveOp::kPermute ? permutation_hash(source_of)
                             : groups != nullptr          ? groups->hash()
                                                          : 0;
  const MpiGroup::Desc d{
      op,           in.size(),
      out.size(),   ++seq_,
      hash ^ site_, groups != nullptr ? static_cast<std::uint32_t>(groups->subgroup_size()) : 0u};
  op_ = op;
  if (group_.aborted())
    throw AbortedError(group_.where(d) + ": the group was aborted: " + group_.reason());
  group_.slots_[static_cast<std::size_t>(local_)] = {d, in.data(), out.data(), source_of, groups};
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

void MpiCommunicator::all_reduce_max(std::span<const float> in, std::span<float> out) {
  MESHRUN_CHECK(in.size() == out.size(), "pmax: input and output differ in size");
  run(CollectiveOp::kAllReduceMax, in, out);
}

void MpiCommunicator::all_reduce_min(std::span<const float> in, std::span<float> out) {
  MESHRUN_CHECK(in.size() == out.size(), "pmin: input and output differ in size");
  run(CollectiveOp::kAllReduceMin, in, out);
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

void MpiCommunicator::grouped(CollectiveOp op, const IndexGroups& groups, std::span<const float> in,
                              std::span<float> out) {
  MESHRUN_CHECK(groups.members() == group_.size(),
                std::string(op_name(op)) + ": axis_index_groups of another group's size");
  MESHRUN_CHECK(op != CollectiveOp::kPermute, "ppermute takes no axis_index_groups");
  const auto k = static_cast<std::size_t>(groups.subgroup_size());
  MESHRUN_CHECK(op == CollectiveOp::kAllGather       ? out.size() == k * in.size()
                : op == CollectiveOp::kReduceScatter ? in.size() == k * out.size()
                                                     : in.size() == out.size(),
                std::string(op_name(op)) + ": input and output sizes do not fit the subgroups");
  run(op, in, out, {}, &groups);
  if (op == CollectiveOp::kAllReduceMean) {
    const auto n = static_cast<float>(k);
    for (float& v : out) v /= n;
  }
}

}  // namespace meshrun
