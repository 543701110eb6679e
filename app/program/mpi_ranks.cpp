#include "program/mpi_ranks.hpp"

#include <CLI/Error.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "exit_codes.hpp"
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
  const std::vector<std::string> all = job.to_root(Step::kLaunch, mine.bytes());
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

Wire share_setup(MpiJob& job, const std::function<void(Wire&)>& prepare) {
  if (job.rank() != 0) {
    check_launch(job);
    Wire setup(job.from_root(Step::kSetup, {}));
    if (const auto code = static_cast<int>(setup.u64())) throw CLI::RuntimeError(code);
    take_hosts(setup);
    return setup;
  }
  Wire setup, more;
  try {
    check_launch(job);
    status_hosts();
    prepare(more);
  } catch (const Error& e) {
    Wire stop;
    stop.put(static_cast<std::uint64_t>(exit_code_of(e)));
    job.from_root(Step::kSetup, stop.bytes());
    throw;
  } catch (...) {  // a bug (exit 4): the others end with it too, not at their bound
    Wire stop;
    stop.put(static_cast<std::uint64_t>(kExitInternal));
    job.from_root(Step::kSetup, stop.bytes());
    throw;
  }
  setup.put(std::uint64_t{0});
  put_hosts(setup);
  Wire sent(setup.bytes() + more.bytes());
  job.from_root(Step::kSetup, sent.bytes());
  sent.u64();
  take_hosts(sent);
  return sent;
}

void run_on_job(double timeout_s, const std::function<void(MpiJob&)>& run) {
  init_mpi_threads(nullptr, nullptr);
  // Waits on rank 0's own work (reading the case, grading, printing) get a minute beyond the
  // collectives' timeout.
  const auto timeout = std::chrono::milliseconds(static_cast<long>(std::ceil(timeout_s * 1000)));
  const auto bound = timeout + std::chrono::seconds(60);
  int code = kExitOk;
  std::string message;
  int rank = 0;
  {
    MpiJob job(bound);
    rank = job.rank();
    std::optional<std::uint64_t> ended;  // rank 0's code, taken by a wait for another step
    try {
      run(job);
    } catch (const JobEnded& e) {  // rank 0 failed before that step and said why
      std::uint64_t got = Wire(e.bytes()).u64();
      ended = got == kEvaluating ? kExitInternal : got;
    } catch (const CLI::RuntimeError& e) {
      code = e.get_exit_code();
    } catch (const TimeoutError& e) {  // a wait of the job's own: on the ranks e names
      code = kExitMesh;
      message = job.broken() ? stopped_answering(e, "") : e.what();
    } catch (const Error& e) {
      code = exit_code_of(e);
      message = e.what();
    } catch (const std::exception& e) {
      code = kExitInternal;
      message = std::string("internal error: ") + e.what();
    }
    // A wait that timed out: a peer may be dead and the code could not reach it. MPI_Abort
    // ends every rank (with mpirun's exit code, not ours).
    if (job.broken()) give_up(job, message, code == kExitOk ? kExitMesh : code);
    // A rank 0 stopped and continued (by the kill after another rank gave up on it) is quiet.
    if (rank == 0 && job.reported_elsewhere()) MPI_Abort(MPI_COMM_WORLD, kExitMesh);
    // Said before the code goes out: mpirun ends the job as soon as one rank exits non-zero.
    if (rank == 0 && !message.empty()) report_error(message);
    if (ended) {
      code = static_cast<int>(*ended);
    } else {
      try {
        Wire w;
        w.put(static_cast<std::uint64_t>(code));
        // Longer than rank 0 can take to answer, so rank 0 gives up on a stopped peer first: after
        // a failure it gathers outcomes (bounded by the timeout) and answers; after a success its
        // wait for them is bounded by `bound`.
        const auto wait = (code == kExitOk ? bound : timeout) + timeout + std::chrono::seconds(1);
        // Rank 0 may still be grading (finish_run: the rules that run the program again) and says
        // every 5 s that it is alive: each wait is bounded, not the grading.
        std::uint64_t got = kEvaluating;
        while (got == kEvaluating) got = Wire(job.from_root(Step::kEnd, w.bytes(), wait)).u64();
        code = static_cast<int>(got);
      } catch (const TimeoutError& e) {
        give_up(job, stopped_answering(e, message), code == kExitOk ? kExitMesh : code);
      } catch (const Error& e) {
        give_up(job, e.what(), code == kExitOk ? kExitMesh : code);
      }
    }
  }
  if (rank == 0) status_exit(code);
  MPI_Finalize();
  if (code != kExitOk) throw CLI::RuntimeError(code);
}
#endif

}  // namespace meshrun
