#include "io/mpi/mpi_command.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "io/mpi/mpi_runner.hpp"
#include "support/errors.hpp"
#include "support/exit_code.hpp"

namespace meshrun {

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

void check_launch(MpiJob& job, const std::vector<std::string>& words) {
  const std::vector<LaunchMessage> all = to_root(job, LaunchMessage{words, this_host()});
  if (job.rank() != 0) return;
  std::vector<std::string> hosts;
  for (const LaunchMessage& m : all) hosts.push_back(m.host);
  set_rank_hosts(std::move(hosts));
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r].words == words) continue;
    throw InputError("", "rank " + std::to_string(r) + " runs '" + joined(all[r].words) +
                             "' but rank 0 runs '" + joined(words) +
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

void status_hosts() {
  std::string text;
  for (std::size_t r = 0; r < rank_hosts().size(); ++r)
    text += "host " + std::to_string(r) + " " + rank_hosts()[r] + "\n";
  to_status_file(text, true);
}

void status_exit(int code) { to_status_file("exit " + std::to_string(code) + "\n", false); }

SetupMessage share_setup(MpiJob& job, const std::vector<std::string>& words,
                         const std::function<MeshShape()>& prepare) {
  if (job.rank() != 0) {
    check_launch(job, words);
    SetupMessage setup = from_root(job, SetupMessage{});
    if (setup.code != 0) throw ExitWith(setup.code);
    set_rank_hosts(setup.hosts);
    return setup;
  }
  SetupMessage setup;
  try {
    check_launch(job, words);
    status_hosts();
    setup.mesh = prepare();
  } catch (const Error& e) {
    from_root(job, SetupMessage{.code = exit_code_of(e)});
    throw;
  } catch (...) {  // a bug (exit 4): the others end with it too, not at their bound
    from_root(job, SetupMessage{.code = kExitInternal});
    throw;
  }
  setup.hosts = rank_hosts();
  return from_root(job, setup);
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
    std::optional<int> ended;  // rank 0's code, taken by a wait for another step
    try {
      run(job);
    } catch (const JobEnded& e) {  // rank 0 failed before that step and said why
      const EndMessage end = EndMessage::decode(e.bytes());
      ended = end.alive ? kExitInternal : end.code;
    } catch (const ExitWith& e) {
      code = e.code();
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
      code = *ended;
    } else {
      try {
        // Longer than rank 0 can take to answer, so rank 0 gives up on a stopped peer first: after
        // a failure it gathers outcomes (bounded by the timeout) and answers; after a success its
        // wait for them is bounded by `bound`.
        const auto wait = (code == kExitOk ? bound : timeout) + timeout + std::chrono::seconds(1);
        // Rank 0 may still be grading (finish_run: the rules that run the program again) and says
        // every 5 s that it is alive: each wait is bounded, not the grading.
        EndMessage end{.alive = true};
        while (end.alive) end = from_root(job, EndMessage{.code = code}, wait);
        code = end.code;
      } catch (const TimeoutError& e) {
        give_up(job, stopped_answering(e, message), code == kExitOk ? kExitMesh : code);
      } catch (const Error& e) {
        give_up(job, e.what(), code == kExitOk ? kExitMesh : code);
      }
    }
  }
  if (rank == 0) status_exit(code);
  MPI_Finalize();
  if (code != kExitOk) throw ExitWith(code);
}

}  // namespace meshrun
