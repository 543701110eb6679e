// The failure paths through the meshrun binary, as a user sees them (issue #4, items 1, 2, 4):
// `--inject fail:D@K` and `--inject stall:D@K --timeout S` on both programs end with exit 3,
// nothing on stdout and exactly one stderr line naming the device, the collective (op, axis,
// sequence number) and what happened; a stall ends within the timeout plus slack (an upper bound
// that catches a hang, not a timing assertion). A mismatch cannot be injected from the command
// line; it is tested on the library (mesh_test, collectives_test).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const std::string kSource = MESHRUN_SOURCE_DIR;
const std::string kBinary = MESHRUN_BINARY;
// A run still going after this long is hung: it is killed and the test fails.
constexpr auto kHang = 60s;

struct Result {
  int code = -1;
  std::string out, err;
  double seconds = 0;  // wall time of the process
  bool killed = false;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs meshrun with `args` in the source directory; stdout and stderr go to temp files.
Result run(const std::vector<std::string>& args) {
  char dir[] = "/tmp/meshrun_failure_cli.XXXXXX";
  BOOST_REQUIRE(mkdtemp(dir) != nullptr);
  const std::string out_path = std::string(dir) + "/out", err_path = std::string(dir) + "/err";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0 || chdir(kSource.c_str()) != 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv{const_cast<char*>(kBinary.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(kBinary.c_str(), argv.data());
    _exit(127);
  }
  Result r;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() - start > kHang) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.killed = true;
      break;
    }
    std::this_thread::sleep_for(2ms);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  fs::remove_all(dir);
  return r;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Exit 3, nothing on stdout, exactly one line on stderr: "meshrun: <message>\n".
void expect_one_mesh_error(const Result& r) {
  BOOST_TEST(!r.killed, "hung: killed after " << r.seconds << " s");
  BOOST_TEST(r.code == 3, r.err);
  BOOST_TEST(r.out.empty(), r.out);
  BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1, r.err);
  BOOST_TEST(r.err.rfind("meshrun: ", 0) == 0u, r.err);
}

struct Program {
  std::string name, example, axis, op;  // op: the collective its body calls first (and only)
};
const std::vector<Program> kPrograms = {
    {"dp-step", "cases/dp-step/example1.json", "data", "pmean"},
    {"tp-mlp", "cases/tp-mlp/example1.json", "model", "psum"},
};

}  // namespace

// Item 1: device 3 throws at its first collective; the seven others are released.
BOOST_AUTO_TEST_CASE(injected_failure_is_one_line_naming_device_collective_and_error) {
  for (const Program& p : kPrograms) {
    BOOST_TEST_CONTEXT(p.name) {
      const Result r = run({p.name, "--inject", "fail:3@1", p.example});
      expect_one_mesh_error(r);
      BOOST_TEST(r.err == "meshrun: device 3 failed at " + p.op + " #1 on '" + p.axis +
                              "': injected failure (--inject fail:3@1)\n",
                 r.err);
    }
  }
}

// Item 2: device 5 never arrives; the others wait --timeout 0.3 and name it.
BOOST_AUTO_TEST_CASE(injected_stall_times_out_naming_the_missing_device) {
  for (const Program& p : kPrograms) {
    BOOST_TEST_CONTEXT(p.name) {
      const Result r = run({p.name, "--inject", "stall:5@1", "--timeout", "0.3", p.example});
      expect_one_mesh_error(r);
      // The timeout names the collective as the program called it (pmean in dp-step).
      BOOST_TEST(r.err == "meshrun: " + p.op + " #1 on '" + p.axis +
                              "': timed out after 300 ms; device(s) 5 never arrived\n",
                 r.err);
      // An upper bound that catches a hang or an ignored --timeout (default 10 s), not a timing
      // assertion: process start, case reading and 8 threads fit in the slack many times over.
      BOOST_TEST(r.seconds < 0.3 + 5.0, r.seconds << " s");
    }
  }
}

// Several devices stalled: all of them are named.
BOOST_AUTO_TEST_CASE(two_stalled_devices_are_both_named) {
  const Result r = run({"dp-step", "--inject", "stall:2@1", "--inject", "stall:6@1", "--timeout",
                        "0.2", "cases/dp-step/example1.json"});
  expect_one_mesh_error(r);
  BOOST_TEST(has(r.err, "pmean #1 on 'data': timed out after 200 ms; device(s) 2, 6 never arrived"),
             r.err);
}

// An injection past the last collective never fires: the run succeeds and matches expected.
BOOST_AUTO_TEST_CASE(injection_that_is_never_reached_changes_nothing) {
  for (const Program& p : kPrograms) {
    BOOST_TEST_CONTEXT(p.name) {
      const Result clean = run({p.name, p.example});
      const Result r = run({p.name, "--inject", "fail:3@2", "--inject", "stall:1@9", p.example});
      BOOST_TEST(r.code == 0, r.err);
      BOOST_TEST(r.err.empty(), r.err);
      BOOST_TEST(r.out == clean.out);
    }
  }
}

// Item 4: --inject and --timeout are documented options of every program.
BOOST_AUTO_TEST_CASE(inject_and_timeout_are_documented) {
  for (const Program& p : kPrograms) {
    BOOST_TEST_CONTEXT(p.name) {
      const Result r = run({p.name, "--help"});
      BOOST_TEST(r.code == 0);
      BOOST_TEST(has(r.out, "--inject"), r.out);
      BOOST_TEST(has(r.out, "fail:D@K"), r.out);
      BOOST_TEST(has(r.out, "stall:D@K"), r.out);
      BOOST_TEST(has(r.out, "--timeout"), r.out);
    }
  }
}

// A malformed or impossible injection is a usage error (exit 2), not a mesh failure.
BOOST_AUTO_TEST_CASE(bad_injections_are_usage_errors) {
  for (const std::string bad : {"fail:3", "stall:x@1", "fail:3@0", "crash:1@1", "fail:8@1"}) {
    BOOST_TEST_CONTEXT(bad) {
      const Result r = run({"dp-step", "--inject", bad, "cases/dp-step/example1.json"});
      BOOST_TEST(r.code == 2, r.err);
      BOOST_TEST(r.out.empty());
      BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1, r.err);
      BOOST_TEST(has(r.err, "--inject"), r.err);
    }
  }
}
