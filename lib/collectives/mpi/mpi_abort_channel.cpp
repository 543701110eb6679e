// The abort channel of mpi_group.hpp: notices between ranks, and the watcher thread.
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
  if (!aborted()) MPI_Comm_free(&notices_);  // else left to MPI_Finalize (mpi_group.hpp)
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

}  // namespace meshrun
