#include "io/mpi/mpi_job.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <thread>

#include "support/errors.hpp"

namespace meshrun {

namespace {
constexpr int kReportedTag = 2;  // tell_reported's note: a tag of its own, read only by a probe
// A step's messages travel under a tag of their own: the step costs no byte of the message.
constexpr int kStepTags = 16;
int tag_of(Step step) { return kStepTags + static_cast<int>(step); }
}  // namespace

const char* step_name(Step step) {
  switch (step) {
    case Step::kLaunch:
      return "its command line (the launch check)";
    case Step::kSetup:
      return "the run's setup";
    case Step::kStart:
      return "the shard_map's start";
    case Step::kBlocks:
      return "its devices' input blocks";
    case Step::kOutcome:
      return "its devices' outcome";
    case Step::kEnd:
      return "the job's exit code";
  }
  return "an unknown step";
}

MpiJob::MpiJob(std::chrono::milliseconds bound) : bound_(bound) {
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Request req;
  MPI_Comm_idup(MPI_COMM_WORLD, &comm_, &req);  // non-blocking: a missing rank is a timeout
  wait(req, "every rank to start", -1, bound_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
}

MpiJob::~MpiJob() {
  // A broken job may have requests pending on comm_: leave it to MPI_Abort.
  if (!broken_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiJob::timed_out(const std::string& what, std::vector<int> peers, ms bound) {
  broken_ = true;
  std::string from;
  for (int r : peers) from += (from.empty() ? " from rank " : ", rank ") + std::to_string(r);
  throw TimeoutError(
      "timed out after " + std::to_string(bound.count()) + " ms waiting for " + what + from,
      std::move(peers));
}

void MpiJob::wait(MPI_Request& req, const char* what, int peer, ms bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (int tries = 0;; ++tries) {
    int done = 0;
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      broken_ = true;
      throw CollectiveError("rank " + std::to_string(rank_) + ": MPI failed waiting for " + what);
    }
    if (done) return;
    if (std::chrono::steady_clock::now() >= deadline)
      timed_out(what, peer >= 0 ? std::vector<int>{peer} : std::vector<int>{}, bound);
    pause(tries);
  }
}

void MpiJob::send(int to, Step step, const std::string& bytes, ms bound) {
  if (bound == ms{0}) bound = bound_;
  MESHRUN_CHECK(bytes.size() <= INT_MAX, "a message of more than 2 GiB");
  MPI_Request req;
  MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, tag_of(step), comm_, &req);
  wait(req, "a message to be taken", to, bound);
}

std::string MpiJob::recv(int from, Step step, ms bound) {
  if (bound == ms{0}) bound = bound_;
  // The size first (a probe), then the bytes; both bounded.
  const auto deadline = std::chrono::steady_clock::now() + bound;
  std::string bytes;
  for (int tries = 0; !take(from, step, bytes, deadline); ++tries) {
    if (std::chrono::steady_clock::now() >= deadline) timed_out("a message", {from}, bound);
    pause(tries);
  }
  return bytes;
}

bool MpiJob::take(int from, Step step, std::string& bytes, Clock::time_point deadline) {
  MPI_Status status;
  int found = 0;
  // The first message from `from` (any tag) must be of `step` -- or tell_reported's note, which
  // is never taken here (and may stand before a message of `step`).
  MPI_Iprobe(from, MPI_ANY_TAG, comm_, &found, &status);
  if (!found) return false;
  if (from == 0 && step != Step::kEnd && status.MPI_TAG == tag_of(Step::kEnd)) {
    std::string end;
    take(0, Step::kEnd, end, deadline);
    throw JobEnded(std::move(end));
  }
  if (status.MPI_TAG != tag_of(step) && status.MPI_TAG != kReportedTag) {
    broken_ = true;  // the two ranks no longer agree where the job is: nothing after can be trusted
    const int theirs = status.MPI_TAG - kStepTags;
    const bool known =
        theirs >= static_cast<int>(Step::kLaunch) && theirs <= static_cast<int>(Step::kEnd);
    throw InternalError("rank " + std::to_string(rank_) + " waited for " + step_name(step) +
                        " from rank " + std::to_string(from) + " and was sent " +
                        (known ? std::string(step_name(static_cast<Step>(theirs)))
                               : "a message of tag " + std::to_string(status.MPI_TAG)) +
                        ": the ranks are at different steps of the job");
  }
  MPI_Message msg;
  MPI_Improbe(from, tag_of(step), comm_, &found, &msg, &status);
  if (!found) return false;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  bytes.assign(static_cast<std::size_t>(count), '\0');
  MPI_Request req;
  MPI_Imrecv(bytes.data(), count, MPI_BYTE, &msg, &req);
  // What is left of the bound (the message is matched: only its bytes are still to come).
  const auto left = std::chrono::duration_cast<ms>(deadline - Clock::now());
  wait(req, "a message", from, std::max(left, ms{1}));
  return true;
}

void MpiJob::pause(int tries) {
  if (tries < 100) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void MpiJob::tell_reported() {
  static const char note = 0;
  std::vector<MPI_Request> sends;
  for (int r = 0; r < ranks_; ++r) {
    if (r == rank_) continue;
    sends.emplace_back();
    MPI_Isend(&note, 1, MPI_BYTE, r, kReportedTag, comm_, &sends.back());
  }
  const auto until = Clock::now() + std::chrono::milliseconds(100);
  int done = 0;
  for (int tries = 0; !done && Clock::now() < until; ++tries) {
    MPI_Testall(static_cast<int>(sends.size()), sends.data(), &done, MPI_STATUSES_IGNORE);
    pause(tries);
  }
  for (MPI_Request& r : sends)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

bool MpiJob::reported_elsewhere() {
  int found = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, kReportedTag, comm_, &found, MPI_STATUS_IGNORE);
  return found != 0;
}

std::string MpiJob::from_root(Step step, const std::string& bytes, ms bound) {
  if (rank_ != 0) return recv(0, step, bound);
  for (int r = 1; r < ranks_; ++r) send(r, step, bytes, bound);
  return bytes;
}

std::vector<std::string> MpiJob::to_root(Step step, const std::string& bytes, ms bound) {
  if (rank_ != 0) {
    send(0, step, bytes, bound);
    return {};
  }
  if (bound == ms{0}) bound = bound_;
  // Every rank's message taken as it comes, under one deadline: a rank that never sends does not
  // hold up the others', and a timeout names every rank still missing (not only the first).
  const auto deadline = Clock::now() + bound;
  std::vector<std::string> all(static_cast<std::size_t>(ranks_));
  all[0] = bytes;
  std::vector<int> missing;
  for (int r = 1; r < ranks_; ++r) missing.push_back(r);
  for (int tries = 0; !missing.empty(); ++tries) {
    std::erase_if(missing,
                  [&](int r) { return take(r, step, all[static_cast<std::size_t>(r)], deadline); });
    if (missing.empty()) break;
    if (Clock::now() >= deadline) timed_out("a message", missing, bound);
    pause(tries);
  }
  return all;
}

void Wire::put(std::uint64_t v) { raw(&v, sizeof v); }
void Wire::put(const std::string& s) {
  put(static_cast<std::uint64_t>(s.size()));
  raw(s.data(), s.size());
}
void Wire::put(const Shape& s) {
  put(static_cast<std::uint64_t>(s.size()));
  for (std::size_t d : s) put(static_cast<std::uint64_t>(d));
}
void Wire::put(const Tensor& t) {
  put(t.shape);
  raw(t.data.data(), t.data.size() * sizeof(float));
}
void Wire::put(const MeshShape& m) {
  put(static_cast<std::uint64_t>(m.size()));
  for (const auto& [axis, size] : m) {
    put(axis);
    put(static_cast<std::uint64_t>(size));
  }
}

void Wire::take(void* p, std::size_t n) {
  MESHRUN_CHECK(n <= bytes_.size() - at_, "a message shorter than its contents");
  std::memcpy(p, bytes_.data() + at_, n);
  at_ += n;
}
std::uint64_t Wire::u64() {
  std::uint64_t v = 0;
  take(&v, sizeof v);
  return v;
}
std::string Wire::str() {
  std::string s(u64(), '\0');
  take(s.data(), s.size());
  return s;
}
Shape Wire::shape() {
  Shape s(u64());
  for (std::size_t& d : s) d = u64();
  return s;
}
Tensor Wire::tensor() {
  Tensor t;
  t.shape = shape();
  t.data.resize(shape_size(t.shape));
  take(t.data.data(), t.data.size() * sizeof(float));
  return t;
}
MeshShape Wire::mesh() {
  MeshShape m(u64());
  for (auto& [axis, size] : m) {
    axis = str();
    size = static_cast<int>(u64());
  }
  return m;
}

}  // namespace meshrun
