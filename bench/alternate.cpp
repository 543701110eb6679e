// alternate.cpp -- the start-up row of issue 9's table (bench/programs_table.sh, row 5): two
// commands timed as whole processes, run in pairs, so that every run of one has a run of the
// other beside it at the same moment of the machine.
//
//   alternate PAIRS WARMUP [--limit SECONDS] -- COMMAND_A ARGS... -- COMMAND_B ARGS...
//
// (A's arguments end at the first "--", so A cannot take "--" itself; B can.) Each run is timed
// from fork to waitpid (CLOCK_MONOTONIC), stdin, stdout and stderr on /dev/null, argv passed to
// execv as given (no shell, no PATH search). A run still going after --limit seconds (default
// 60) is killed by SIGALRM (set in the child before exec, so the timing is untouched) and counts
// as failed. Pair i runs A then B when i is even, B then
// A when odd. WARMUP pairs run first and are not counted. Prints one JSON line:
//
//   {"pairs":N,"a_median_ms":...,"b_median_ms":...,"ratio":...,"pair_ratio_median":...,
//    "pair_ratio_p25":...,"pair_ratio_p75":...,"a_failed":F,"b_failed":G}
//
// ratio is A's median over B's; pair_ratio_* are over each pair's A/B, of the pairs whose two runs
// both exited 0. a_failed and b_failed count the runs of each that did not (exit 1 at the end when
// any did: the timing of a failing run means nothing).
//
// Why not hyperfine: it runs all of one command's runs and then the other's, so on this shared
// 2-vCPU VM, whose speed moves by up to 2x from one second to the next, the ratio depends on what
// the machine did between the two blocks (per-slice ratios of 30 runs spread from 0.4 to 3.9 in
// one run of programs_table.sh). Pairs see the same machine.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

double now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// One run of argv, killed after `limit_s` seconds; its wall time in ms, or a negative number when
// it did not exit 0.
double run_once(char* const* argv, unsigned limit_s) {
  const double start = now_ms();
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
      if (null > 2) close(null);
    }
    alarm(limit_s);  // survives exec: SIGALRM's default action ends a command that hangs
    execv(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  const double ms = now_ms() - start;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ms : -1;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

int usage() {
  std::fputs(
      "usage: alternate PAIRS WARMUP [--limit SECONDS] -- COMMAND_A ARGS... -- COMMAND_B ARGS...\n",
      stderr);
  return 2;
}

// A count in [min, 10^6]; -1 when `text` is anything else.
long count_arg(const char* text, long min) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min || v > 1000000) return -1;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) return usage();
  const long pairs = count_arg(argv[1], 1);
  const long warmup = count_arg(argv[2], 0);
  long limit_s = 60;
  int at = 3;
  if (std::strcmp(argv[at], "--limit") == 0 && at + 1 < argc) {
    limit_s = count_arg(argv[at + 1], 1);
    at += 2;
  }
  if (at >= argc || std::strcmp(argv[at], "--") != 0 || limit_s < 0) return usage();
  char** a = argv + at + 1;
  char** b = a;
  while (*b != nullptr && std::strcmp(*b, "--") != 0) ++b;
  if (*b == nullptr || b == a || b[1] == nullptr || pairs < 0 || warmup < 0) return usage();
  *b++ = nullptr;  // A's argv ends here; B's starts after the separator

  std::vector<double> ta, tb, ratios;
  int a_failed = 0;
  int b_failed = 0;
  for (long i = -warmup; i < pairs; ++i) {
    double x = 0;
    double y = 0;
    if ((i & 1) == 0) {
      x = run_once(a, static_cast<unsigned>(limit_s));
      y = run_once(b, static_cast<unsigned>(limit_s));
    } else {
      y = run_once(b, static_cast<unsigned>(limit_s));
      x = run_once(a, static_cast<unsigned>(limit_s));
    }
    if (i < 0) continue;
    a_failed += x < 0 ? 1 : 0;
    b_failed += y < 0 ? 1 : 0;
    if (x < 0 || y < 0) continue;
    ta.push_back(x);
    tb.push_back(y);
    ratios.push_back(x / y);
  }
  if (ta.empty()) {
    std::fprintf(stderr,
                 "alternate: no pair where both commands exited 0 (%s failed %d times, %s %d)\n",
                 a[0], a_failed, b[0], b_failed);
    return 1;
  }
  const double ma = quantile(ta, 0.5);
  const double mb = quantile(tb, 0.5);
  std::printf(
      "{\"pairs\":%zu,\"a_median_ms\":%.4f,\"b_median_ms\":%.4f,\"ratio\":%.4f,"
      "\"pair_ratio_median\":%.4f,\"pair_ratio_p25\":%.4f,\"pair_ratio_p75\":%.4f,"
      "\"a_failed\":%d,\"b_failed\":%d}\n",
      ta.size(), ma, mb, ma / mb, quantile(ratios, 0.5), quantile(ratios, 0.25),
      quantile(ratios, 0.75), a_failed, b_failed);
  return a_failed + b_failed == 0 ? 0 : 1;
}
