#include "program/mpi_ranks.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "support/errors.hpp"

#ifdef MESHRUN_HAVE_MPI
#include "io/mpi/mpi_job.hpp"
#include "io/mpi/mpi_runner.hpp"
#endif

namespace meshrun {

namespace {
std::vector<std::string>& words() {
  static std::vector<std::string> w;
  return w;
}
}  // namespace

void record_command_line(int argc, char** argv) {
  words().assign(argv + std::min(argc, 1), argv + argc);
}

const std::vector<std::string>& command_words() { return words(); }

#ifdef MESHRUN_HAVE_MPI
namespace {

std::string joined(const std::vector<std::string>& w) {
  std::string s;
  for (const std::string& word : w) s += (s.empty() ? "" : " ") + word;
  return s;
}

// OpenMPI 4's mpirun --enable-recovery (or --mca orte_enable_recovery 1, or the variable itself)
// tells every rank so in its environment.
bool under_recovery() {
  const char* v = std::getenv("OMPI_MCA_orte_enable_recovery");
  if (v == nullptr) return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return !(s.empty() || s == "0" || s == "false" || s == "no" || s == "disabled");
}

}  // namespace

void check_launch(MpiJob& job) {
  Wire mine;
  mine.put(static_cast<std::uint64_t>(command_words().size()));
  for (const std::string& w : command_words()) mine.put(w);
  const std::vector<std::string> all = job.to_root(mine.bytes());
  if (job.rank() != 0) return;
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    Wire theirs(all[r]);
    std::vector<std::string> w(theirs.u64());
    for (std::string& word : w) word = theirs.str();
    throw InputError("", "rank " + std::to_string(r) + " runs '" + joined(w) +
                             "' but rank 0 runs '" + joined(command_words()) +
                             "': every rank must run the same command");
  }
  if (under_recovery()) {
    throw InputError("mpirun --enable-recovery",
                     "mpirun then exits 0 whatever meshrun exits, so a failed run would look like "
                     "a success; run without it (mpirun, or meshrun's --timeout, ends the job "
                     "when a rank dies or stops)");
  }
}

void give_up(MpiJob& job, const std::string& message, int code) {
  if (job.rank() > 0) std::this_thread::sleep_for(std::chrono::seconds(job.rank() - 1));
  if (job.reported_elsewhere()) MPI_Abort(MPI_COMM_WORLD, code);  // without a word
  job.tell_reported();
  abort_job(message, code);
}
#endif

}  // namespace meshrun
