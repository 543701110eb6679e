// The failure paths through the meshrun binary, as a user sees them (issue #4, items 1, 2, 4):
// `--inject fail:D@K` and `--inject stall:D@K --timeout S` on both programs end with exit 3,
// nothing on stdout and exactly one stderr line naming the device, the collective (op, axis,
// sequence number) and what happened; a stall ends within the timeout plus slack (an upper bound
// that catches a hang, not a timing assertion). A mismatch cannot be injected from the command
// line; it is tested on the library (mesh_test, collectives_test).
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>

#include "support/run_meshrun.hpp"
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

using meshrun::testing::kSource;

using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::slurp;

using meshrun::testing::has;

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

// Two devices that fail on their own at the same collective: the lower-numbered one's failure is
// the verdict, on every run (collectives/first_cause.hpp). By time, it was either, exit 3 on one
// run and 4 on the next.
BOOST_AUTO_TEST_CASE(two_devices_failing_at_once_give_one_verdict_every_run) {
  const std::string pmean = "pmean #1 on 'data'";
  for (int i = 0; i < 6; ++i) {
    Result r = run({"dp-step", "--inject", "fail:3@1", "--inject", "internal:1@1",
                    "cases/dp-step/example1.json"});
    BOOST_TEST(r.code == 4, r.err);
    BOOST_TEST(r.err == "meshrun: internal error: injected at device 1's " + pmean +
                            " (--inject internal:1@1)\n",
               r.err);
    r = run({"dp-step", "--inject", "internal:3@1", "--inject", "fail:1@1",
             "cases/dp-step/example1.json"});
    BOOST_TEST(r.code == 3, r.err);
    BOOST_TEST(r.err == "meshrun: device 1 failed at " + pmean +
                            ": injected failure (--inject fail:1@1)\n",
               r.err);
  }
}

// Item 2: device 5 never arrives; the others wait --timeout 0.3 and name it.
BOOST_AUTO_TEST_CASE(injected_stall_times_out_naming_the_missing_device) {
  for (const Program& p : kPrograms) {
    BOOST_TEST_CONTEXT(p.name) {
      const Result r = run({p.name, "--inject", "stall:5@1", "--timeout", "1", p.example});
      expect_one_mesh_error(r);
      // The timeout names the collective as the program called it (pmean in dp-step).
      BOOST_TEST(
          r.err ==
              "meshrun: " + p.op + " #1 on '" + p.axis +
                  "': timed out after 1000 ms; device(s) 5 never arrived (5 stalled by --inject)\n",
          r.err);
      // An upper bound that catches a hang or an ignored --timeout (default 10 s), not a timing
      // assertion: process start, case reading and 8 threads fit in the slack many times over.
      BOOST_TEST(r.seconds < 1.0 + 5.0, r.seconds << " s");
    }
  }
}

// A program run leaves its device threads unpinned (mesh_options: pinning slows the start of a
// one-run process). While device 5 stalls, every thread of the process may still run on every
// CPU this test may use. The child runs on at most 2 CPUs, so that its 8 devices outnumber them
// (the mesh pins only then) on any machine.
BOOST_AUTO_TEST_CASE(program_runs_leave_device_threads_unpinned) {
  cpu_set_t mine;
  BOOST_REQUIRE(sched_getaffinity(0, sizeof mine, &mine) == 0);
  cpu_set_t two;
  CPU_ZERO(&two);
  for (int c = 0, kept = 0; c < CPU_SETSIZE && kept < 2; ++c) {
    if (CPU_ISSET(c, &mine)) {
      CPU_SET(c, &two);
      ++kept;
    }
  }
  BOOST_REQUIRE(sched_setaffinity(0, sizeof two, &two) == 0);  // inherited by the child
  const auto allowed = [](const std::string& status_file) {
    std::istringstream in(slurp(status_file));
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("Cpus_allowed_list:")) return line;
    return std::string("no Cpus_allowed_list in " + status_file);
  };
  std::vector<std::string> masks;
  meshrun::testing::RunOptions o;
  o.meanwhile = [&](pid_t pid) {
    const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    const auto until = std::chrono::steady_clock::now() + 5s;
    std::size_t threads = 0;
    while (threads < 9 && std::chrono::steady_clock::now() < until) {  // main + 8 devices
      std::this_thread::sleep_for(20ms);
      std::error_code ec;
      threads = 0;
      for (auto it = fs::directory_iterator(tasks, ec); !ec && it != fs::directory_iterator();
           it.increment(ec))
        ++threads;
    }
    std::error_code ec;
    for (auto it = fs::directory_iterator(tasks, ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
      masks.push_back(allowed(it->path().string() + "/status"));
  };
  const Result r = meshrun::testing::run_with(
      {"dp-step", "--inject", "stall:5@1", "--timeout", "3", "cases/dp-step/example1.json"}, o);
  const std::string two_cpus = allowed("/proc/self/status");
  BOOST_REQUIRE(sched_setaffinity(0, sizeof mine, &mine) == 0);
  BOOST_TEST(r.code == 3, r.err);
  BOOST_TEST(masks.size() >= 9u);
  for (const std::string& m : masks) BOOST_TEST(m == two_cpus);
}

// Several devices stalled: all of them are named.
BOOST_AUTO_TEST_CASE(two_stalled_devices_are_both_named) {
  const Result r = run({"dp-step", "--inject", "stall:2@1", "--inject", "stall:6@1", "--timeout",
                        "1", "cases/dp-step/example1.json"});
  expect_one_mesh_error(r);
  BOOST_TEST(has(r.err,
                 "pmean #1 on 'data': timed out after 1000 ms; device(s) 2, 6 never arrived "
                 "(2, 6 stalled by --inject)"),
             r.err);
}

// On a 2-D mesh the group that times out first may be one whose missing member is itself waiting
// in another group for the stalled device (mlp-train: psum over 'model', then pmean over 'data'),
// or one that waits for the stalled device in a later collective than the one it stalled at.
// Whichever group's deadline comes first, the line is the one of the collective where the device
// stalled, with the device as the cause: one verdict, not one of three by timing.
BOOST_AUTO_TEST_CASE(a_2d_timeout_names_the_stalled_device_not_the_ones_waiting_for_it) {
  for (const std::string mesh : {"data=2,model=4", "data=4,model=2"}) {
    for (const int device : {0, 3, 6}) {
      const std::string d = std::to_string(device);
      BOOST_TEST_CONTEXT(mesh << ", stall:" << d << "@1") {
        const Result r = run({"mlp-train", "--mesh", mesh, "--inject", "stall:" + d + "@1",
                              "--timeout", "1", "cases/mlp-train/example1.json"});
        expect_one_mesh_error(r);
        BOOST_TEST(r.err == "meshrun: psum #1 on 'model': timed out after 1000 ms; device(s) " + d +
                                " never arrived (" + d + " stalled by --inject)\n",
                   r.err);
      }
    }
  }
}

// An injection past the last collective never fires: it tested nothing, and says so (exit 2,
// nothing on stdout) instead of passing as a run that survived it.
BOOST_AUTO_TEST_CASE(injection_that_is_never_reached_is_reported) {
  for (const Program& p : kPrograms) {
    BOOST_TEST_CONTEXT(p.name) {
      const Result r = run({p.name, "--inject", "stall:1@9", p.example});
      BOOST_TEST(r.code == 2, r.err);
      BOOST_TEST(r.out.empty(), r.out);
      BOOST_TEST(
          r.err ==
          "meshrun: --inject: stall:1@9 never fired: device 1 entered only 1 collective(s)\n");
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
