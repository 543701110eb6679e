#include "program/mpi_ranks.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
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

std::string this_host() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS) return "?";
  return std::string(name, static_cast<std::size_t>(len));
}

// Appends (or, with `fresh`, writes) `text` to $MESHRUN_STATUS_FILE, if set.
void to_status_file(const std::string& text, bool fresh) {
  const char* path = std::getenv("MESHRUN_STATUS_FILE");
  if (path == nullptr || *path == '\0') return;
  std::FILE* f = std::fopen(path, fresh ? "w" : "a");
  if (f == nullptr) return;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

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
  mine.put(this_host());
  const std::vector<std::string> all = job.to_root(mine.bytes());
  if (job.rank() != 0) return;
  std::vector<std::string> hosts(all.size());
  std::vector<std::vector<std::string>> words(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    Wire theirs(all[r]);
    words[r].resize(theirs.u64());
    for (std::string& word : words[r]) word = theirs.str();
    hosts[r] = theirs.str();
  }
  set_rank_hosts(std::move(hosts));
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (words[r] == words[0]) continue;
    const std::vector<std::string>& w = words[r];
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
  status_exit(code);
  abort_job(message, code);
}

void put_hosts(Wire& w) {
  w.put(static_cast<std::uint64_t>(rank_hosts().size()));
  for (const std::string& h : rank_hosts()) w.put(h);
}

void take_hosts(Wire& w) {
  std::vector<std::string> hosts(w.u64());
  for (std::string& h : hosts) h = w.str();
  set_rank_hosts(std::move(hosts));
}

void status_hosts() {
  std::string text;
  for (std::size_t r = 0; r < rank_hosts().size(); ++r)
    text += "host " + std::to_string(r) + " " + rank_hosts()[r] + "\n";
  to_status_file(text, true);
}

void status_exit(int code) { to_status_file("exit " + std::to_string(code) + "\n", false); }
#endif

}  // namespace meshrun
