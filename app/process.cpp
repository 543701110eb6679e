#include "process.hpp"

#include <fcntl.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#include <pthread.h>
#endif

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "io/signal_cleanup.hpp"
#include "support/cpus.hpp"
#include "support/exit_code.hpp"
#include "support/startup_point.hpp"

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
#if defined(__GLIBC__)
// Sets malloc parameter `param` unless the user set it: by its environment variable or its
// glibc tunable.
void mallopt_unless_set(const char* env, const char* tunable, int param, int value) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv(env) != nullptr ||
      (tunables != nullptr && std::strstr(tunables, tunable) != nullptr))
    return;
  mallopt(param, value);
}
#endif

// The CPUs counted are those this process may run on (support/cpus.hpp: one sched_getaffinity),
// not hardware_concurrency()'s, which glibc reads from /sys/devices/system/cpu/online (three
// syscalls on sysfs at every start) and which counts the host's CPUs in a smaller cpuset.
void fewer_malloc_arenas() {
#if defined(__GLIBC__)
  mallopt_unless_set("MALLOC_ARENA_MAX", "glibc.malloc.arena_max", M_ARENA_MAX,
                     static_cast<int>(usable_cpus()));
#endif
}

// Freed memory stays with the process: blocks and tensors up to 32 MiB come from the malloc arenas
// instead of each being an mmap of its own, and the arenas are not trimmed. A device's input
// blocks, freed inside its body, are then the pages its outputs reuse, already faulted in, and no
// munmap is counted in its compute: tp-mlp's big case with one device per core went from 0.53 to
// 0.64 of the FMA ceiling (bench/README.md, the GEMM row: bench/gemm_share.py, median of 8
// rounds). A process that exits soon after gives nothing back by unmapping. Limits the user set
// (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or their GLIBC_TUNABLES) are left alone.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt_unless_set("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold", M_MMAP_THRESHOLD,
                     32 << 20);
  mallopt_unless_set("MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold", M_TRIM_THRESHOLD,
                     1 << 30);
#endif
}

// `meshrun PROGRAM CASE` with no flag, the plain run (and the one issue 9 times as a whole
// process), skips CLI11: building the command's 17 options and parsing them was ~5% of that run.
// Anything else goes through CLI11 as before: a flag, `-` for stdin, an empty CASE, more words,
// and `++` (which CLI11 reads as the end of a subcommand, not as a CASE). Both paths run the same
// code with the same defaults (ProgramFlags), and cli_test's plain_run_matches_the_cli11_path
// checks they print the same bytes with the same exit codes.
}  // namespace

void tune_process() {
  smaller_thread_stacks();
  fewer_malloc_arenas();
  keep_freed_memory();
  // Past RLIMIT_FSIZE, write(2) fails with EFBIG (reported, exit 6) instead of killing meshrun
  // with SIGXFSZ before it can say anything. SIGPIPE keeps its default: a reader that left ends us
  // at once, as it does every filter; with SIGPIPE ignored, EPIPE is reported as exit 6.
  std::signal(SIGXFSZ, SIG_IGN);
  // A mapped input truncated under meshrun is an input error (io/signal_cleanup.hpp).
  set_input_error_exit_code(kExitUsage);
}

// A closed stdin, stdout or stderr would be handed to the next file meshrun opens (a --trace file
// would then receive the result, or the error messages). Each closed one is reopened on
// /dev/null; a closed stdout or stderr is also remembered, since nothing written there would
// arrive (a report asked for on stderr is then exit 6: support/exit_code.hpp).
bool reserve_standard_fds() {
  bool stdout_open = true;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == 1) stdout_open = false;
    if (fd == 2) stderr_was_closed();
    const int got = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (got != fd && got >= 0) ::close(got);  // cannot happen: open takes the lowest free fd
  }
  return stdout_open;
}

// A program run or `bench allreduce` that asks for MPI (--backend mpi, or started by mpirun) is
// handed to meshrun-mpi, built beside this binary when MPI was found: the same code linked with
// OpenMPI, whose shared libraries would otherwise be loaded at every start. Without it the run
// reports MPI as absent.
void exec_mpi_build_if_asked(int argc, char** argv) {
  const bool program =
      argc >= 2 && (find_program(argv[1]) != nullptr || std::string_view(argv[1]) == "run");
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
  // Issue 51: how far a rank got, for meshrun-mpirun's watch (and where the host tests hold it).
  startup_point("exec");
  ::execv(sibling.c_str(), argv);  // returns only on failure: then the run reports MPI as absent
}

}  // namespace meshrun
