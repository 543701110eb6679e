// The progress line of `check` and `bench allreduce` (issue #12): drawn on stderr only when
// stderr is a terminal -- here a pseudo-terminal from forkpty -- and erased at the end; when
// stderr is a file, the output is exactly the normal one.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "support/run_meshrun.hpp"

namespace {

using meshrun::testing::kBinary;
using meshrun::testing::kSource;
using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;

using meshrun::testing::has;

struct PtyRun {
  int code = -1;
  std::string terminal;  // what meshrun wrote to the terminal (its stderr)
  std::string out;       // its stdout, sent to a file
};

// Runs meshrun with stderr on a pseudo-terminal and stdout in a file; killed after a minute.
PtyRun run_on_pty(const std::vector<std::string>& args) {
  TempDir dir;
  const std::string out_path = dir / "out";
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || chdir(kSource.c_str()) != 0) _exit(127);
    dup2(out, 1);
    std::vector<char*> argv{const_cast<char*>(kBinary.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(kBinary.c_str(), argv.data());
    _exit(127);
  }
  PtyRun r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  char buf[4096];
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      BOOST_FAIL("meshrun on a pty did not finish within a minute");
    }
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO: the child and every holder of the terminal are gone
    r.terminal.append(buf, static_cast<std::size_t>(n));
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  return r;
}

const std::string kErase = "\r\x1b[K";

}  // namespace

BOOST_AUTO_TEST_CASE(check_with_stderr_not_a_terminal_prints_exactly_the_report) {
  const Result r = run({"check", "cases/dp-step"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(r.err.empty(), r.err);  // not a byte of progress
  BOOST_TEST(
      r.out.starts_with("PASS cases/dp-step/example1.json: numbers ok; structure ok (3 rules)\n"));
  BOOST_TEST(r.out.ends_with("\n10 passed, 0 failed\n"));
}

BOOST_AUTO_TEST_CASE(check_on_a_terminal_draws_one_updating_line_and_erases_it) {
  const PtyRun r = run_on_pty({"check", "cases/dp-step"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(has(r.terminal, kErase + "check: 1/10 cases, 0 failed, "), r.terminal);
  BOOST_TEST(has(r.terminal, kErase + "check: 10/10 cases, 0 failed, "), r.terminal);
  BOOST_TEST(r.terminal.ends_with(kErase), r.terminal);  // nothing left on the terminal
  BOOST_TEST(!has(r.terminal, "\n"));                    // one line, rewritten in place
  // stdout is the same as without a terminal.
  BOOST_TEST(r.out == run({"check", "cases/dp-step"}).out);
}

BOOST_AUTO_TEST_CASE(failures_so_far_are_counted_on_the_line) {
  TempDir dir;
  dir.write("a.json", R"({"problem":"dp-step","name":"a","input":{"w":[[0.0]],"b":[0.0],)"
                      R"("x":[[1.0],[2.0],[3.0],[4.0],[5.0],[6.0],[7.0],[8.0]],)"
                      R"("y":[[1.0],[1.0],[1.0],[1.0],[1.0],[1.0],[1.0],[1.0]],"lr":0.1}})");
  const PtyRun r = run_on_pty({"check", dir.path, "cases/tp-mlp/example1.json"});
  BOOST_TEST(r.code == 1);
  BOOST_TEST(has(r.terminal, "check: 1/2 cases, 1 failed, "), r.terminal);
  BOOST_TEST(has(r.terminal, "check: 2/2 cases, 1 failed, "), r.terminal);
  BOOST_TEST(r.out.ends_with("1 passed, 1 failed\n"));
}

BOOST_AUTO_TEST_CASE(an_error_starts_on_a_clean_line) {
  const PtyRun r = run_on_pty({"check", "--inject", "internal:0@1", "cases/dp-step"});
  BOOST_TEST(r.code == 4);
  // Nothing was drawn before the first case failed; the error line is the whole terminal output
  // (the terminal turns "\n" into "\r\n").
  BOOST_TEST(r.terminal.starts_with("meshrun: internal error: injected"), r.terminal);
}

BOOST_AUTO_TEST_CASE(bench_on_a_terminal_counts_sizes) {
  const PtyRun r = run_on_pty({"bench", "allreduce", "--max-bytes", "32", "--size-budget", "0.01"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(has(r.terminal, kErase + "bench allreduce: 1/2 sizes, 0 wrong, last 4 B, "),
             r.terminal);
  BOOST_TEST(has(r.terminal, kErase + "bench allreduce: 2/2 sizes, 0 wrong, last 32 B, "),
             r.terminal);
  BOOST_TEST(r.terminal.ends_with(kErase), r.terminal);
  BOOST_TEST(has(r.out, "\n           4         1 "), r.out);  // the table itself, on stdout
  const Result plain = run({"bench", "allreduce", "--max-bytes", "32", "--size-budget", "0.01"});
  BOOST_TEST(plain.err.empty(), plain.err);
}
