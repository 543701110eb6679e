// A run with nothing to grade does not grade: `meshrun run PROG.json CASE` on a case without
// `expected` (and no --trace) skips the exercise's rules, which run the program three more times
// (b2 moved, the reference, lr doubled: lib/grade/semantic_rules.cpp). Seen in the CPU time the
// process takes (wait4, every thread): the ungraded run takes well under what the same run with
// --trace, which shows the rules' verdict, takes -- about 0.4 of it here, when both took the same
// before (app/program/run.cpp, finish_run).
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/run_meshrun.hpp"

using namespace meshrun::testing;

namespace {

// The least CPU seconds (user + system) of `rounds` runs of meshrun with `args`, its output
// dropped; each run must exit 0.
double least_cpu(const std::vector<std::string>& args, int rounds) {
  double least = 1e9;
  for (int r = 0; r < rounds; ++r) {
    const pid_t pid = fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
      std::vector<char*> argv = {const_cast<char*>(kBinary.c_str())};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      if (freopen("/dev/null", "w", stdout) == nullptr || chdir(kSource.c_str()) != 0) _exit(127);
      execv(argv[0], argv.data());
      _exit(127);
    }
    int status = 0;
    rusage usage{};
    BOOST_REQUIRE(wait4(pid, &status, 0, &usage) == pid);
    BOOST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    const auto s = [](const timeval& v) {
      return static_cast<double>(v.tv_sec) + 1e-6 * static_cast<double>(v.tv_usec);
    };
    least = std::min(least, s(usage.ru_utime) + s(usage.ru_stime));
  }
  return least;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_case_without_expected_is_not_graded_by_running_the_program_again) {
  const TempDir dir;
  // bench programs writes its cases without `expected`: mlp-train B=64 D=256 H=512 O=64, .npy.
  const Result bench =
      run({"bench", "programs", "--quick", "--rounds", "1", "--programs", "", "--keep", dir.path});
  BOOST_REQUIRE_MESSAGE(bench.code == 0, bench.err);
  const std::string c = dir / "mlp-train-B=64,D=256,H=512,O=64/npy/case.json";
  BOOST_REQUIRE(slurp(c).find("\"expected\"") == std::string::npos);
  const std::string program = "cases/programs/mlp-train.json";
  const double ungraded = least_cpu({"run", program, c}, 3);
  const double traced = least_cpu({"run", program, c, "--trace=" + (dir / "trace.txt")}, 3);
  BOOST_TEST(slurp(dir / "trace.txt").find("structure:\n  ok: ") != std::string::npos);
  BOOST_TEST(ungraded < 0.7 * traced, "CPU s: ungraded " << ungraded << ", traced " << traced);
}
