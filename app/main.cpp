// meshrun's entry point: the CLI11 app (one subcommand per program, `check`, `bench`) and the one
// exception ladder that turns every outcome into an exit code (see exit_codes.hpp).
#include <fcntl.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#include <pthread.h>
#endif

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "io/output.hpp"
#include "io/signal_cleanup.hpp"
#include "mpi_ranks.hpp"
#include "support/errors.hpp"

namespace meshrun {

void report_error(const std::string& message) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::cerr << "meshrun: " << line << '\n' << std::flush;
}

namespace {

// CLI11 reports `meshrun frob` as "A subcommand is required"; name the word instead.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<std::string> rest = app.remaining();
  if (app.get_subcommands().empty() && !rest.empty() && !rest.front().starts_with("-")) {
    return "unknown subcommand '" + rest.front() + "' (see meshrun --help)";
  }
  return e.what();
}

// Under mpirun every rank parses the same command line, before MPI starts: a usage error (or
// --help) is printed by rank 0 alone; the other ranks exit 0 silently (run_app says why).
// OpenMPI tells each process its rank in OMPI_COMM_WORLD_RANK.
}  // namespace

bool quiet_rank() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  return rank != nullptr && std::string_view(rank) != "0";
}

// The one mapping from meshrun's error types (support/errors.hpp) to exit codes.
int exit_code_of(const Error& e) {
  if (dynamic_cast<const InputError*>(&e)) return kExitUsage;
  if (dynamic_cast<const CollectiveError*>(&e) || dynamic_cast<const DeviceError*>(&e))
    return kExitMesh;
  if (dynamic_cast<const NoCasesError*>(&e)) return kExitNoCases;
  if (dynamic_cast<const OutputError*>(&e)) return kExitOutput;
  if (dynamic_cast<const NonFiniteError*>(&e)) return kExitNonFinite;
  return kExitInternal;  // InternalError, whose message already says "internal error"
}

int run_guarded(const CLI::App* app, const std::function<void()>& work) {
  try {
    work();
    return kExitOk;
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a command's own outcome, already reported
  } catch (const CLI::ParseError& e) {
    if (app == nullptr) {  // only CLI11's parse throws these, and it has an app
      report_error(std::string("internal error: ") + e.what());
      return kExitInternal;
    }
    if (e.get_exit_code() == 0) {  // --help, --version: printed on stdout, checked like a result
      if (quiet_rank()) return kExitOk;
      std::ostringstream text;
      app->exit(e, text, std::cerr);
      try {
        write_stdout(text.str());
      } catch (const OutputError& out) {
        report_error(out.what());
        return kExitOutput;
      }
      return kExitOk;
    }
    // Under mpirun every rank finds the same usage error before MPI starts. Rank 0 says it and
    // exits 2, which is mpirun's exit code; the others exit 0, because mpirun kills the whole
    // job as soon as one rank exits non-zero, and that could cut rank 0's message off.
    if (quiet_rank()) return kExitOk;
    report_error(parse_error_message(*app, e));
    return kExitUsage;
  } catch (const Error& e) {  // meshrun's own: the message says what happened
    report_error(e.what());
    return exit_code_of(e);
  } catch (const std::exception& e) {
    report_error(std::string("internal error: ") + e.what());
    return kExitInternal;
  } catch (...) {
    report_error("internal error: unknown exception");
    return kExitInternal;
  }
}

int run_app(CLI::App& app, int argc, char** argv) {
  return run_guarded(&app, [&] { app.parse(argc, argv); });
}

namespace {

// A closed stdin, stdout or stderr would be handed to the next file meshrun opens (a --trace file
// would then receive the result, or the error messages). Each closed one is reopened on
// /dev/null; a closed stdout is also remembered, since nothing written there would arrive.
bool reserve_standard_fds() {
  bool stdout_open = true;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == 1) stdout_open = false;
    const int got = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (got != fd && got >= 0) ::close(got);  // cannot happen: open takes the lowest free fd
  }
  return stdout_open;
}

// The outcome once stdout is closed: a deferred write error (some file systems report ENOSPC only
// at close) turns a success or a grading verdict into exit 6, since the reader never got it.
int finish(int code) {
  try {
    close_stdout();
  } catch (const OutputError& e) {
    if (code == kExitOk || code == kExitDiffers) {
      report_error(e.what());
      return kExitOutput;
    }
  }
  return code;
}

#ifndef MESHRUN_HAVE_MPI
// A program run or `bench allreduce` that asks for MPI (--backend mpi, or started by mpirun) is
// handed to meshrun-mpi, built beside this binary when MPI was found: the same code linked with
// OpenMPI, whose shared libraries would otherwise be loaded at every start. Without it the run
// reports MPI as absent.
void exec_mpi_build_if_asked(int argc, char** argv) {
  const bool program = argc >= 2 && find_program(argv[1]) != nullptr;
  const bool bench =
      argc >= 3 && std::string_view(argv[1]) == "bench" && std::string_view(argv[2]) == "allreduce";
  if (!program && !bench) return;
  std::string backend = "auto";
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--backend" && i + 1 < argc) backend = argv[i + 1];
    if (a.starts_with("--backend=")) backend = a.substr(10);
  }
  if (!use_mpi(backend)) return;
  std::error_code ec;
  const auto sibling =
      std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "meshrun-mpi";
  if (ec || ::access(sibling.c_str(), X_OK) != 0) return;
  ::execv(sibling.c_str(), argv);  // returns only on failure: then the run reports MPI as absent
}
#endif

}  // namespace
}  // namespace meshrun

namespace {
// Threads started from here on (the device threads) get 2 MiB stacks instead of RLIMIT_STACK's
// 8 MiB: the deepest device body uses a few KiB. Eight 8 MiB stacks overflow glibc's 40 MB cache of
// stacks, so joining the devices unmapped four of them on the exiting main thread, each unmap a TLB
// shootdown on the other CPU (issue 9: start-up; seen with perf trace). Best effort.
void smaller_thread_stacks() {
#if defined(__GLIBC__)
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return;
  if (pthread_attr_setstacksize(&attr, std::size_t{2} << 20) == 0)
    pthread_setattr_default_np(&attr);
  pthread_attr_destroy(&attr);
#endif
}

// At most one malloc arena per CPU instead of glibc's eight per CPU. Each device thread's first
// allocation would otherwise make its own arena: an mmap of 128 MiB of address space, an munmap to
// align it, an mprotect, two fresh pages, and their teardown at exit, seven times over. That was
// ~5% of the first example's run (issue 9: start-up; bench/README.md). No more threads than CPUs
// run at once, so the devices share the arenas without waiting on them for long (the big cases
// measured no slower). A limit the user set (MALLOC_ARENA_MAX, or glibc.malloc.arena_max in
// GLIBC_TUNABLES) is left alone. Best effort.
void fewer_malloc_arenas() {
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr ||
      (tunables != nullptr && std::strstr(tunables, "glibc.malloc.arena_max") != nullptr))
    return;
  const unsigned cpus = std::thread::hardware_concurrency();
  mallopt(M_ARENA_MAX, cpus == 0 ? 1 : static_cast<int>(cpus));
#endif
}

// `meshrun PROGRAM CASE` with no flag, the plain run (and the one issue 9 times as a whole
// process), skips CLI11: building the command's 17 options and parsing them was ~5% of that run.
// Anything else goes through CLI11 as before: a flag, `-` for stdin, an empty CASE, more words,
// and `++` (which CLI11 reads as the end of a subcommand, not as a CASE). Both paths run the same
// code with the same defaults (ProgramFlags), and cli_test's plain_run_matches_the_cli11_path
// checks they print the same bytes with the same exit codes.
// `--NAME=` with nothing after the `=` (`--json=$REPORT` with REPORT unset in a script): CLI11
// would take the next word as the value -- the case file, which the report then replaced -- and
// reads `--trace=` as a bare `--trace`. Every such word is refused before CLI11 sees it: the
// option named, "" when there is none. Words after `--` are not options.
std::string empty_option_value(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") return "";
    if (word.size() > 3 && word.starts_with("--") && word.ends_with('=') &&
        word.find('=') == word.size() - 1)
      return std::string(word.substr(0, word.size() - 1));
  }
  return "";
}

bool plain_case_word(int argc, char** argv) {
  if (argc != 3) return false;
  const std::string_view word = argv[2];
  return !word.empty() && !word.starts_with('-') && word != "++";
}
}  // namespace

int main(int argc, char** argv) {
  using namespace meshrun;
  record_command_line(argc, argv);  // what every rank of an MPI job must agree on
  smaller_thread_stacks();
  fewer_malloc_arenas();
  // Past RLIMIT_FSIZE, write(2) fails with EFBIG (reported, exit 6) instead of killing meshrun
  // with SIGXFSZ before it can say anything. SIGPIPE keeps its default: a reader that left ends us
  // at once, as it does every filter; with SIGPIPE ignored, EPIPE is reported as exit 6.
  std::signal(SIGXFSZ, SIG_IGN);
  // A mapped input truncated under meshrun is an input error (io/signal_cleanup.hpp).
  set_input_error_exit_code(kExitUsage);
#ifndef MESHRUN_HAVE_MPI
  exec_mpi_build_if_asked(argc, argv);
#endif
  if (!reserve_standard_fds()) {
    report_error("stdout: " + std::string(std::strerror(EBADF)));
    return kExitOutput;
  }
  const ProgramDef* asked = argc >= 2 ? find_program(argv[1]) : nullptr;
  if (asked != nullptr && plain_case_word(argc, argv)) {
    return finish(run_guarded(nullptr, [&] { run_plain_program(*asked, argv[2]); }));
  }
  if (const std::string option = empty_option_value(argc, argv); !option.empty()) {
    if (quiet_rank()) return kExitOk;  // under mpirun rank 0 says it (see run_guarded)
    report_error(option + ": '" + option + "=' gives no value" +
                 (option == "--trace" ? " (--trace=FILE, or --trace alone for stderr)" : ""));
    return kExitUsage;
  }
  CLI::App app{"meshrun: runs JAX shard_map-style SPMD programs, one thread per device", "meshrun"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "meshrun 0.1.0");
  try {
    // A program run registers its own subcommand only: CLI11 builds every option's parser and
    // help text up front, and that was half of a small run's instructions (issue 9 item 6). The
    // words after a program name are parsed as they would be with every command registered.
    if (asked != nullptr) {
      add_program_command(app, *asked);
    } else {
      for (const ProgramDef* program : all_programs()) add_program_command(app, *program);
      add_check_command(app);
      // ---- `meshrun bench`: registered here, implemented in app/cmd_bench.cpp ----
      add_bench_command(app);
    }
  } catch (const std::exception& e) {
    report_error(std::string("internal error: ") + e.what());
    return kExitInternal;
  }
  return finish(run_app(app, argc, argv));
}
