// How a job of several ranks fails, at the CLI (`mpirun ... meshrun`), for the rank counts each
// test names: an error's exit code and line are the single-process run's whatever rank it comes
// from; ranks that run different commands are a usage error before any work; a rank stopped or
// killed mid-run is the one the line names, whichever rank's wait ends first; and under
// `mpirun --enable-recovery`, whose exit code is 0 whatever the ranks exit, meshrun refuses to
// run and leaves `--output FILE` alone, as every failed run does.
#include <signal.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "mpi/mpirun.hpp"

using namespace meshrun::testing;

namespace {

Result mpirun_np(int np, const std::vector<std::string>& args,
                 const std::vector<std::string>& extra = {}) {
  return run_with(args, mpirun_options(np, extra));
}

// The process is gone, or a zombie (its parent, mpirun, has exited): nothing is left running.
bool gone(pid_t pid) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos || stat.compare(close, 4, ") Z ") == 0) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Runs `args` on 4 ranks and sends `sig` to rank `victim` once its devices run; then lets a
// stopped victim go on and kills it if it is still there (no process may outlive the test).
struct Stopped {
  Result r;
  bool signalled = false;
  bool left_over = false;
};

Stopped stop_rank(int victim, int sig, const std::vector<std::string>& args) {
  Stopped s;
  RunOptions o = mpirun_options(4);
  pid_t pid = 0;
  o.meanwhile = [&](pid_t mpirun) {
    pid = running_rank(mpirun, victim, 4);
    s.signalled = pid != 0 && ::kill(pid, sig) == 0;
  };
  s.r = run_with(args, o);
  if (pid != 0) {
    ::kill(pid, SIGCONT);
    s.left_over = !gone(pid);
    if (s.left_over) ::kill(pid, SIGKILL);
  }
  return s;
}

}  // namespace

// internal:D@K raises an InternalError on device D: exit 4 and the one line of one process,
// whichever rank hosts D (rank 0's devices only see the abort it causes).
BOOST_AUTO_TEST_CASE(an_internal_error_on_any_rank_is_the_one_process_exit_and_line) {
  for (const char* inject : {"internal:7@1", "internal:1@1", "internal:4@1"}) {
    const std::vector<std::string> args = {"dp-step", "cases/dp-step/example2.json", "--inject",
                                           inject};
    const Result one = run(args);
    BOOST_TEST(one.code == 4);
    for (int np : {2, 4, 8}) {
      const Result many = mpirun_np(np, args);
      BOOST_TEST_CONTEXT(inject << " at R=" << np << ", stderr: " << many.err) {
        BOOST_TEST(many.code == one.code);
        BOOST_TEST(many.out.empty());
        BOOST_TEST(meshrun_lines(many.err) == meshrun_lines(one.err));
      }
    }
  }
  // A device failure on a 2-D mesh, from the last rank: exit 3 and the same line, as before.
  const std::vector<std::string> fail = {"mlp-train", "cases/mlp-train/example1.json", "--inject",
                                         "internal:6@2"};
  const Result one = run(fail);
  const Result many = mpirun_np(4, fail);
  BOOST_TEST(many.code == one.code, many.err);
  BOOST_TEST(meshrun_lines(many.err) == meshrun_lines(one.err));
}

// `mpirun -np 1 meshrun A : -np 1 meshrun B`: exit 2 and one line from rank 0 naming the first
// rank whose command differs, before any work (no output file is made).
BOOST_AUTO_TEST_CASE(ranks_that_run_different_commands_are_a_usage_error) {
  TempDir dir;
  const std::string out = dir / "r.json";
  struct Launch {
    std::vector<std::string> first, second;
    int second_np;
    std::string want;
  };
  const std::vector<Launch> launches = {
      {{"dp-step", "cases/dp-step/example1.json"},
       {"tp-mlp", "cases/tp-mlp/example1.json"},
       1,
       "meshrun: rank 1 runs 'tp-mlp cases/tp-mlp/example1.json' but rank 0 runs 'dp-step "
       "cases/dp-step/example1.json -o " +
           out + "': every rank must run the same command"},
      {{"dp-step", "cases/dp-step/example1.json"},
       {"dp-step", "cases/dp-step/example2.json"},
       2,
       "meshrun: rank 1 runs 'dp-step cases/dp-step/example2.json' but rank 0 runs 'dp-step "
       "cases/dp-step/example1.json -o " +
           out + "': every rank must run the same command"},
  };
  for (const Launch& l : launches) {
    RunOptions o = mpirun_options(1);
    std::vector<std::string> args = l.first;
    args.insert(args.end(), {"-o", out, ":", "-np", std::to_string(l.second_np), kBinary});
    args.insert(args.end(), l.second.begin(), l.second.end());
    const Result r = run_with(args, o);
    BOOST_TEST_CONTEXT(l.second.at(1) << ", stderr: " << r.err) {
      BOOST_TEST(!r.killed);
      BOOST_TEST(r.code == 2);
      BOOST_TEST(r.out.empty());
      BOOST_TEST(meshrun_lines(r.err) == std::vector<std::string>{l.want});
      BOOST_TEST(!std::filesystem::exists(out));
    }
  }
  // A usage error on a rank other than 0 only: rank 0 waits in MPI_Init for it, so that rank
  // says it itself (after giving rank 0 its moment) and the job ends, exit 2, instead of hanging.
  const Result bogus = run_with({"dp-step", "cases/dp-step/example1.json", ":", "-np", "1", kBinary,
                                 "dp-step", "cases/dp-step/example1.json", "--bogus"},
                                mpirun_options(1));
  BOOST_TEST(!bogus.killed);
  BOOST_TEST(bogus.code == 2, bogus.err);
  BOOST_TEST(meshrun_lines(bogus.err) ==
             std::vector<std::string>{
                 "meshrun: rank 1: The following argument was not expected: --bogus"});
  // The same usage error on every rank: one line, rank 0's.
  const Result all =
      run_with({"dp-step", "cases/dp-step/example1.json", "--bogus"}, mpirun_options(4));
  BOOST_TEST(all.code == 2, all.err);
  BOOST_TEST(meshrun_lines(all.err) ==
             std::vector<std::string>{"meshrun: The following argument was not expected: --bogus"});
  // The same words on every rank, a flag's spelling included: an ordinary run.
  const Result same = run_with({"dp-step", "cases/dp-step/example1.json", ":", "-np", "1", kBinary,
                                "dp-step", "cases/dp-step/example1.json"},
                               mpirun_options(1));
  BOOST_TEST(same.code == 0, same.err);
}

// SIGSTOP of rank 2 of 4 mid-run (--timeout 2), a device stalled by --inject on it or on rank 0
// (the reporter): the survivors' waits end at different moments, yet the one line is rank 0's and
// names rank 2; with rank 0 stopped, rank 1 reports it. A killed rank: mpirun ends the job, and
// a line meshrun may print names the killed rank too. Nothing is left running.
BOOST_AUTO_TEST_CASE(a_stopped_or_killed_rank_is_the_one_the_line_names) {
  struct Case {
    int victim, sig;
    const char* stall;
    std::string head;  // how the line starts
  };
  const std::vector<Case> cases = {
      {2, SIGSTOP, "stall:4@1", "meshrun: rank 0: rank 2 stopped answering"},
      {2, SIGSTOP, "stall:0@1", "meshrun: rank 0: rank 2 stopped answering"},
      {0, SIGSTOP, "stall:4@1", "meshrun: rank 1: rank 0 stopped answering"},
      {2, SIGKILL, "stall:0@1", "meshrun: rank 0: rank 2 stopped answering"},
  };
  for (const Case& c : cases) {
    for (int round = 0; round < 2; ++round) {
      const Stopped s = stop_rank(c.victim, c.sig,
                                  {"mlp-train", "cases/mlp-train/b16-d4-h32-o3.json", "--inject",
                                   c.stall, "--timeout", "2"});
      const auto lines = meshrun_lines(s.r.err);
      BOOST_TEST_CONTEXT("rank " << c.victim << " sig " << c.sig << " " << c.stall
                                 << ", stderr: " << s.r.err) {
        BOOST_TEST(s.signalled);
        BOOST_TEST(!s.r.killed);
        BOOST_TEST(!s.left_over);
        BOOST_TEST(s.r.code != 0);
        BOOST_TEST(s.r.out.empty());
        if (c.sig == SIGKILL) {  // mpirun sees the death and ends the job before any timeout
          BOOST_TEST(lines.size() <= 1u);
          for (const std::string& line : lines) BOOST_TEST(line.starts_with(c.head), line);
        } else {
          BOOST_TEST(s.r.code == 3);
          BOOST_REQUIRE(lines.size() == 1u);
          BOOST_TEST(lines[0].starts_with(c.head), lines[0]);
        }
      }
    }
  }
}

// The other commands that run across ranks end as the programs do when a rank stops mid-run
// (SIGSTOP of rank 2 of 4, --timeout 2): exit 3, one line, rank 0's, naming rank 2 -- not one
// line per rank that timed out, nor a wait in MPI_Finalize for the stopped rank. `run PROG.json`
// (a program file) and `bench allreduce` (in its timing loop; its table so far on stdout).
BOOST_AUTO_TEST_CASE(a_stopped_rank_ends_run_prog_json_and_bench_allreduce_as_a_program) {
  const std::vector<std::vector<std::string>> commands = {
      {"run", "cases/programs/mlp-train.json", "cases/mlp-train/b16-d4-h32-o3.json", "--inject",
       "stall:0@1", "--timeout", "2"},
      {"bench", "allreduce", "--max-bytes", "4096", "--size-budget", "10", "--timeout", "2"},
  };
  for (const std::vector<std::string>& command : commands) {
    const Stopped s = stop_rank(2, SIGSTOP, command);
    const auto lines = meshrun_lines(s.r.err);
    BOOST_TEST_CONTEXT(command.at(0) << ", stderr: " << s.r.err) {
      BOOST_TEST(s.signalled);
      BOOST_TEST(!s.r.killed);
      BOOST_TEST(!s.left_over);
      BOOST_TEST(s.r.code == 3);
      BOOST_REQUIRE(lines.size() == 1u);
      BOOST_TEST(lines[0].starts_with("meshrun: rank 0: rank 2 stopped answering"), lines[0]);
    }
  }
}

// Under `mpirun --enable-recovery` mpirun exits 0 whatever its ranks exit (even after
// MPI_Abort), so no exit code of meshrun's can reach a script: meshrun refuses to run, in one line,
// and leaves --output FILE as it was -- which is what every failed run does to it, the one thing a
// script can check there.
BOOST_AUTO_TEST_CASE(under_enable_recovery_meshrun_refuses_and_output_is_left_alone) {
  TempDir dir;
  const std::string out = dir.write("r.json", "stale\n");
  const Result r =
      mpirun_np(2, {"dp-step", "cases/dp-step/example2.json", "-o", out}, {"--enable-recovery"});
  BOOST_TEST(!r.killed);
  BOOST_TEST(r.code == 0);  // mpirun's, not meshrun's: why meshrun refuses
  BOOST_TEST(r.out.empty());
  BOOST_TEST(meshrun_lines(r.err) ==
                 std::vector<std::string>{
                     "meshrun: mpirun --enable-recovery: mpirun then exits 0 whatever meshrun "
                     "exits, so a failed run would look like a success; run without it (mpirun, "
                     "or meshrun's --timeout, ends the job when a rank dies or stops)"},
             r.err);
  BOOST_TEST(slurp(out) == "stale\n");
  // Without it, a failed run is exit 3 and leaves the file alone as well; a good one replaces it.
  const Result failed =
      mpirun_np(2, {"dp-step", "cases/dp-step/example2.json", "-o", out, "--inject", "fail:7@1"});
  BOOST_TEST(failed.code == 3);
  BOOST_TEST(slurp(out) == "stale\n");
  const Result ok = mpirun_np(2, {"dp-step", "cases/dp-step/example2.json", "-o", out});
  BOOST_TEST(ok.code == 0, ok.err);
  BOOST_TEST(slurp(out) == run({"dp-step", "cases/dp-step/example2.json"}).out);
}
