#include "io/mpi/mpi_runner.hpp"

#include <algorithm>
#include <cstdio>

#include "support/errors.hpp"
#include "support/startup_point.hpp"

namespace meshrun {

void init_mpi_threads(int* argc, char*** argv) {
  int provided = 0;
  startup_point("init");  // issue 51: how far a rank got, for the launcher's watch
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  startup_point("up");
  if (provided < MPI_THREAD_MULTIPLE)
    throw InternalError("MPI provides thread level " + std::to_string(provided) +
                        ", the MPI backend needs MPI_THREAD_MULTIPLE");
}

namespace {
std::vector<std::string>& known_hosts() {
  static std::vector<std::string> h;
  return h;
}
}  // namespace

void set_rank_hosts(std::vector<std::string> hosts) { known_hosts() = std::move(hosts); }
const std::vector<std::string>& rank_hosts() { return known_hosts(); }

std::string hosts_of(const std::vector<int>& ranks) {
  std::vector<std::string> seen;
  for (int r : ranks) {
    if (r < 0 || static_cast<std::size_t>(r) >= known_hosts().size()) return "";
    const std::string& h = known_hosts()[static_cast<std::size_t>(r)];
    if (std::find(seen.begin(), seen.end(), h) == seen.end()) seen.push_back(h);
  }
  std::string s;
  for (const std::string& h : seen) s += (s.empty() ? "" : ", ") + h;
  return seen.empty() ? "" : (seen.size() == 1 ? "host " : "hosts ") + s;
}

std::string stopped_answering(const TimeoutError& e, const std::string& failure) {
  std::string who;
  for (int r : e.missing()) who += (who.empty() ? "" : ", ") + std::to_string(r);
  who = (e.missing().size() == 1 ? "rank " : "ranks ") + who;
  const std::string where = hosts_of(e.missing());
  return who + " stopped answering" + (where.empty() ? "" : " on " + where) +
         " (stopped, killed or hung): " + e.what() +
         (failure.empty() ? "" : "; the run had failed: " + failure);
}

void abort_job(const std::string& message, int code) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "meshrun: rank %d: %s\n", rank, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();
}

}  // namespace meshrun
