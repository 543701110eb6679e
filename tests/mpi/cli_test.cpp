// `mpirun -np R meshrun ...` against the single-process run, at the CLI: R comes from
// MESHRUN_RANKS (one ctest entry per R, see CMakeLists.txt). Every case of cases/dp-step and
// cases/tp-mlp and cases/mlp-train (2-D meshes; two of them on the other meshes too) prints
// byte-identical `--exact` stdout with the same exit code; failures on the last device (on the
// last rank) end every rank with one message; ranks that do not divide the devices are exit 2
// with one message.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mpi/mpirun.hpp"
#include "support/json.hpp"

using namespace meshrun::testing;

namespace {

// The cases a sweep runs. At R = 1 the whole mesh is one rank and no value crosses ranks, so the
// sweeps there take the documented examples only (the one-rank start, read and write). Every case
// runs at R = 2 and 4 (mpi_cli_programs_r4), where several devices share each of several ranks
// and the bytes cross ranks; R = 8 (one device per rank, 8 processes per mpirun) takes the
// examples, whose every value crosses ranks too, and its own failure cases (issue #32.7: the
// whole sweep at R = 8 was the longest entry of CI's ctest).
std::vector<std::string> cases_in(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(kSource + "/" + dir)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".json") continue;
    if ((ranks() == 1 || ranks() == 8) && !name.starts_with("example")) continue;
    files.push_back(dir + "/" + name);
  }
  std::sort(files.begin(), files.end());
  return files;
}

void same_as_one_process(const std::vector<std::string>& args) {
  const Result one = run(args);
  const Result many = mpirun(args);
  BOOST_TEST_CONTEXT(args.at(1) << " at R=" << ranks() << ", stderr: " << many.err) {
    BOOST_TEST(!many.killed);
    BOOST_TEST(many.code == one.code);
    BOOST_TEST(many.out == one.out);  // byte for byte
    BOOST_TEST(meshrun_lines(many.err) == meshrun_lines(one.err));
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_dp_step_and_tp_mlp_case_prints_the_same_bytes) {
  for (const char* dir : {"cases/dp-step", "cases/tp-mlp"}) {
    for (const std::string& file : cases_in(dir)) {
      const std::string program = std::string(dir).substr(6);
      same_as_one_process({program, file, "--exact"});
      if (file.ends_with("example1.json"))
        same_as_one_process({program, file});  // graded, 6 decimals
    }
  }
}

BOOST_AUTO_TEST_CASE(a_failing_device_on_the_last_rank_ends_every_rank_with_one_message) {
  const Result r = mpirun({"dp-step", "cases/dp-step/example2.json", "--inject", "fail:7@1"});
  const auto lines = meshrun_lines(r.err);
  BOOST_TEST(r.code == 3);
  BOOST_TEST(r.out.empty());
  BOOST_REQUIRE(lines.size() == 1u);
  const std::string want = "meshrun: device 7 (rank " + std::to_string(ranks() - 1) +
                           ") failed at pmean #1 on 'data': injected failure (--inject fail:7@1)";
  BOOST_TEST(lines[0] == want);
}

BOOST_AUTO_TEST_CASE(a_stalled_device_on_the_last_rank_is_reported_at_the_timeout) {
  const Result r =
      mpirun({"dp-step", "cases/dp-step/example2.json", "--inject", "stall:7@1", "--timeout", "1"});
  const auto lines = meshrun_lines(r.err);
  BOOST_TEST(r.code == 3);
  BOOST_TEST(r.out.empty());
  BOOST_REQUIRE(lines.size() == 1u);
  BOOST_TEST(lines[0].find("timed out after 1000 ms") != std::string::npos, lines[0]);
  if (ranks() == 1) {  // one rank hosts the whole mesh: the line of one process, diagnosis included
    BOOST_TEST(lines[0] ==
               "meshrun: pmean #1 on 'data': timed out after 1000 ms; device(s) 7 never arrived "
               "(7 stalled by --inject)");
  } else {  // the stalled devices as their ranks name them
    BOOST_TEST(lines[0].find("device 7 (rank " + std::to_string(ranks() - 1) +
                             ") at pmean #1 on 'data' (--inject stall:7@1)") != std::string::npos,
               lines[0]);
  }
}

BOOST_AUTO_TEST_CASE(ranks_that_do_not_divide_the_devices_are_exit_2_with_one_message) {
  if (ranks() == 1) return;  // one rank divides every mesh
  const Result r = mpirun({"dp-step", "cases/dp-step/example1.json", "--devices", "1"});
  const auto lines = meshrun_lines(r.err);
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.out.empty());
  BOOST_REQUIRE(lines.size() == 1u);
  BOOST_TEST(lines[0] == "meshrun: --backend mpi: " + std::to_string(ranks()) +
                             " ranks do not divide the mesh's 1 devices (data=1); run with a "
                             "number of ranks that divides 1");
}

// 2-D meshes across ranks: every mlp-train case on its own mesh (example2-4 are on data=1,model=8,
// data=8,model=1 and data=4,model=2; the others on data=2,model=4), and the smallest and the
// largest case on each of the meshes tests/mesh2d_test.cpp checks in process; the one-axis
// programs on 2-D meshes. (Every case on every mesh was 36 mpiruns per R, a minute of CI in all;
// mesh2d_test's `check --mesh` grades every case on every one of these meshes, one process per
// mesh, against `expected`.)
BOOST_AUTO_TEST_CASE(every_mlp_train_case_prints_the_same_bytes_on_2d_meshes) {
  for (const std::string& file : cases_in("cases/mlp-train"))
    same_as_one_process({"mlp-train", file, "--exact"});
  for (const char* file : {"cases/mlp-train/example1.json", "cases/mlp-train/b16-d4-h32-o3.json"}) {
    for (const char* mesh : {"data=1,model=8", "data=4,model=2", "data=8,model=1"})
      same_as_one_process({"mlp-train", file, "--exact", "--mesh", mesh});
  }
  same_as_one_process({"mlp-train", "cases/mlp-train/example1.json"});  // graded, 6 decimals
  // The trace (mesh, blocks, every device's collectives per group) is the same text too.
  TempDir dir;
  const Result one =
      run({"mlp-train", "cases/mlp-train/example1.json", "--trace=" + (dir / "one.txt")});
  const Result many =
      mpirun({"mlp-train", "cases/mlp-train/example1.json", "--trace=" + (dir / "many.txt")});
  BOOST_TEST(many.code == one.code);
  BOOST_TEST(slurp(dir / "many.txt") == slurp(dir / "one.txt"));
  BOOST_TEST(slurp(dir / "one.txt").find("device 7: #1 psum[axis_name='model']") !=
             std::string::npos);
  for (const char* mesh : {"data=4,model=2", "data=2,model=4"}) {
    same_as_one_process({"dp-step", "cases/dp-step/example1.json", "--exact", "--mesh", mesh});
    same_as_one_process({"tp-mlp", "cases/tp-mlp/example1.json", "--exact", "--mesh", mesh});
  }
}

// A failure on a 2-D mesh: device 7 (the last rank) fails in its first psum over 'model'; the
// devices of the other 'model' group (on rank 0 when R > 1) go on to the pmean over 'data' and
// are released there. One message, exit 3, as in one process.
BOOST_AUTO_TEST_CASE(a_failure_on_a_2d_mesh_ends_every_rank_with_one_message) {
  const Result r = mpirun({"mlp-train", "cases/mlp-train/example1.json", "--inject", "fail:7@1"});
  const auto lines = meshrun_lines(r.err);
  BOOST_TEST(r.code == 3);
  BOOST_TEST(r.out.empty());
  BOOST_REQUIRE(lines.size() == 1u);
  const std::string want = "meshrun: device 7 (rank " + std::to_string(ranks() - 1) +
                           ") failed at psum #1 on 'model': injected failure (--inject fail:7@1)";
  BOOST_TEST(lines[0] == want);
}

BOOST_AUTO_TEST_CASE(a_stall_on_a_2d_mesh_is_reported_at_the_timeout) {
  const Result r = mpirun(
      {"mlp-train", "cases/mlp-train/example1.json", "--inject", "stall:7@1", "--timeout", "1"});
  const auto lines = meshrun_lines(r.err);
  BOOST_TEST(r.code == 3);
  BOOST_TEST(r.out.empty());
  BOOST_REQUIRE(lines.size() == 1u);
  BOOST_TEST(lines[0].find("timed out after 1000 ms") != std::string::npos, lines[0]);
  if (ranks() == 1) {
    BOOST_TEST(lines[0] ==
               "meshrun: psum #1 on 'model': timed out after 1000 ms; device(s) 7 never arrived "
               "(7 stalled by --inject)");
  } else {
    BOOST_TEST(lines[0].find("stall:7@1") != std::string::npos, lines[0]);
  }
}

// CLI11's usage errors come before MPI starts; rank 0 alone prints them and exits 2. (While the
// other ranks exited 2 as well, mpirun sometimes killed rank 0 before its message was out.)
BOOST_AUTO_TEST_CASE(usage_errors_are_printed_once) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"mlp-train", "cases/mlp-train/example1.json", "--bogus"},
        std::vector<std::string>{"frob"},
        std::vector<std::string>{"dp-step", "cases/dp-step/example1.json", "--timeout", "soon"}}) {
    const Result one = run(args);
    const Result r = mpirun(args);
    BOOST_TEST_CONTEXT(args.front() << " " << args.back()) {
      BOOST_TEST(r.code == 2);
      BOOST_TEST(r.out.empty());
      BOOST_TEST(meshrun_lines(r.err) == meshrun_lines(one.err));
      BOOST_TEST(meshrun_lines(r.err).size() == 1u, r.err);
    }
  }
}

// kill -9 of the last rank while the others wait in a collective (device 0 stalls at its first,
// --timeout 3): the job ends -- mpirun sees the death, or the survivors' deadline -- with a
// message and a non-zero code, well before the test's own bound (kHang, 60 s).
BOOST_AUTO_TEST_CASE(a_killed_rank_ends_the_job_with_a_message) {
  RunOptions o = mpirun_options(ranks());
  bool killed = false;
  o.meanwhile = [&](pid_t mpirun) {
    const pid_t victim = running_rank(mpirun, ranks() - 1, ranks());
    killed = victim != 0 && ::kill(victim, SIGKILL) == 0;
  };
  const Result r = run_with({"mlp-train", "cases/mlp-train/b16-d4-h32-o3.json", "--inject",
                             "stall:0@1", "--timeout", "3"},
                            o);
  BOOST_TEST(killed);
  BOOST_TEST(!r.killed, "the job hung: " << r.err);
  BOOST_TEST(r.code != 0);
  BOOST_TEST(r.out.empty());
  const bool said = r.err.find("exited on signal 9") != std::string::npos ||
                    r.err.find("timed out") != std::string::npos;
  BOOST_TEST(said, r.err);
}

namespace {

// What a --profile timeline shows, durations aside: the tracks' names, the main thread's phases,
// and each device's collective spans by name ("psum #1 'model'"), in track order.
struct Timeline {
  std::map<int, std::string> names;
  std::vector<std::string> phases;
  std::map<int, std::vector<std::string>> collectives;
  bool operator==(const Timeline&) const = default;
};

Timeline timeline(const std::string& text) {
  const nlohmann::json doc = meshrun::testing::parse_json(text);
  Timeline t;
  for (const nlohmann::json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") t.names[e["tid"]] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    if (e["tid"] == 0) t.phases.push_back(e["name"]);
    if (e["cat"] == "collective") t.collectives[e["tid"]].push_back(e["name"]);
  }
  return t;
}

std::vector<std::string> keys_of_json_line(const std::string& err) {
  std::vector<std::string> keys;
  std::size_t at = 0;
  while (at < err.size()) {
    const std::size_t end = std::min(err.find('\n', at), err.size());
    if (err.compare(at, 2, "{\"") == 0) {
      const nlohmann::ordered_json line =
          meshrun::testing::parse_ordered_json(err.substr(at, end - at));
      for (const auto& item : line.items()) keys.push_back(item.key());
    }
    at = end + 1;
  }
  return keys;
}

}  // namespace

// --timings: one JSON line on stderr (rank 0's), with the keys of the single-process line.
// --profile FILE: rank 0 writes one timeline with one track per device, named as in process,
// each device's collectives in the same order; a failed run leaves its timeline too.
BOOST_AUTO_TEST_CASE(timings_and_profile_across_ranks) {
  TempDir dir;
  const std::vector<std::string> args = {"mlp-train", "cases/mlp-train/example1.json", "--timings"};
  std::vector<std::string> one_args = args, many_args = args;
  for (auto* a : {&one_args, &many_args}) a->push_back("--profile");
  one_args.push_back(dir / "one.json");
  many_args.push_back(dir / "many.json");
  const Result one = run(one_args);
  const Result many = mpirun(many_args);
  BOOST_TEST(many.code == 0, many.err);
  BOOST_TEST(many.out == one.out);
  const std::vector<std::string> keys = keys_of_json_line(one.err);
  BOOST_TEST(keys.size() > 3u);
  BOOST_TEST(keys_of_json_line(many.err) == keys, many.err);  // one line: rank 0's only
  BOOST_REQUIRE(std::filesystem::exists(dir / "many.json"));
  const Timeline want = timeline(slurp(dir / "one.json")), got = timeline(slurp(dir / "many.json"));
  BOOST_TEST(got.names.size() == 9u);  // main and 8 devices
  BOOST_TEST((got.names == want.names));
  BOOST_TEST(got.phases == want.phases);
  BOOST_TEST((got.collectives == want.collectives));

  const Result failed = mpirun({"mlp-train", "cases/mlp-train/example1.json", "--inject",
                                "fail:7@1", "--profile", dir / "failed.json"});
  BOOST_TEST(failed.code == 3);
  BOOST_REQUIRE(std::filesystem::exists(dir / "failed.json"));
  const Timeline f = timeline(slurp(dir / "failed.json"));
  BOOST_TEST(f.names.size() == 9u);
  // The failing device reached its psum #1 by definition; whether device 0 got there before the
  // abort did depends on the schedule (it did not, under load at R = 8).
  BOOST_TEST(f.collectives.count(8) == 1u);  // track 8: device 7
}

namespace {

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// same_as_one_process, and the whole --trace file byte for byte.
void same_run_and_trace(const std::vector<std::string>& args, const TempDir& dir) {
  const Result one = run(with(args, {"--trace=" + (dir / "one.trace")}));
  const Result many = mpirun(with(args, {"--trace=" + (dir / "many.trace")}));
  BOOST_TEST_CONTEXT(args.at(1) << " at R=" << ranks() << ", stderr: " << many.err) {
    BOOST_TEST(!many.killed);
    BOOST_TEST(many.code == one.code);
    BOOST_TEST(many.out == one.out);  // byte for byte
    BOOST_TEST(meshrun_lines(many.err) == meshrun_lines(one.err));
    BOOST_TEST(slurp(dir / "many.trace") == slurp(dir / "one.trace"));
  }
  std::filesystem::remove(dir / "one.trace");
  std::filesystem::remove(dir / "many.trace");
}

}  // namespace

// The cumulative, sorting and window primitives (issue #49) across ranks: a top-k routing step
// (top_k, approx_max_k, cumsum, argsort, psum) and a max-pool step with its gradient
// (reduce_window_max, reduce_window_sum, select_and_scatter_add): stdout and the --trace of
// mpirun are one process's byte for byte.
BOOST_AUTO_TEST_CASE(the_sorting_and_pooling_programs_run_across_ranks) {
  TempDir dir;
  for (const char* p : {"topk-routing", "maxpool-cnn"}) {
    const std::string program = std::string("tests/jax/corpus/") + p + ".json";
    const std::string c = std::string("tests/jax/corpus/") + p + "/case1.json";
    same_run_and_trace({"run", program, c, "--exact"}, dir);
    same_as_one_process({"run", program, c});
  }
}

// The sums over devices on f16 (folded in f16 from an all_gather), bf16, i8 and u16 (issue #49,
// dtypes2): stdout and the --trace of mpirun are one process's byte for byte.
BOOST_AUTO_TEST_CASE(the_narrow_dtype_collectives_run_across_ranks) {
  TempDir dir;
  const std::string program = "tests/jax/corpus/collectives-narrow.json";
  const std::string c = "tests/jax/corpus/collectives-narrow/case1.json";
  same_run_and_trace({"run", program, c, "--exact"}, dir);
  same_as_one_process({"run", program, c});
}

// Linear algebra across ranks (issue #49): per-device batched solves (cholesky, triangular_solve,
// lu with its pivots, custom_linear_solve, stack, psum) and their value_and_grad: stdout and the
// --trace of mpirun are one process's byte for byte.
BOOST_AUTO_TEST_CASE(the_linear_algebra_program_runs_across_ranks) {
  TempDir dir;
  const std::string program = "tests/jax/corpus/batched-solve.json";
  const std::string c = "tests/jax/corpus/batched-solve/case1.json";
  same_run_and_trace({"run", program, c, "--exact"}, dir);
  same_as_one_process({"run", program, c});
}

// Programs of several shard_map calls (issue 48): a jax.grad's forward and backward shard_maps
// (dp-grad, fsdp-remat), a shard_map in a scan (the same call three times), a scan beside a
// shard_map and one inside a body. Rank 0 hands every call to the ranks in turn (RootEngine,
// lib/io/mpi/mpi_engine.hpp): stdout and the whole --trace (the last call's, as in one process)
// are one process's byte for byte, and so are --profile's tracks, phases and collectives. A
// failure or a stall in the second call ends every rank, without a hang, with the exit code of
// one process and one line; an injection no call reaches is one process's exit 2 and line; an
// equation failing between two calls ends every rank as in one process. A program of no
// shard_map runs on rank 0 whatever R (its mesh has one device).
BOOST_AUTO_TEST_CASE(every_shard_map_call_of_a_program_runs_across_ranks) {
  if (ranks() == 8) return;  // scan-reverse's mesh has 4 devices: R = 1, 2 and 4
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> programs = {
      {"tests/jax/corpus/dp-grad.json", "tests/jax/corpus/dp-grad/case1.json"},
      {"tests/jax/corpus/fsdp-remat.json", "tests/jax/corpus/fsdp-remat/case1.json"},
      {"tests/cli/programs/control/scan-reverse.json",
       "tests/cli/programs/control/scan-reverse/case1.json"},
      {"tests/cli/programs/control/ring-scan.json",
       "tests/cli/programs/control/ring-scan/case1.json"},
      {"tests/mpi/programs/scan-of-shard-map.json",
       "tests/mpi/programs/scan-of-shard-map-case1.json"},
  };
  for (const auto& [program, c] : programs) {
    same_run_and_trace({"run", program, c, "--exact"}, dir);
    same_as_one_process({"run", program, c});  // graded against `expected`, 6 decimals
  }

  const std::vector<std::string> grad = {"run", "tests/jax/corpus/dp-grad.json",
                                         "tests/jax/corpus/dp-grad/case1.json"};
  // Device 3's psum #2 is the backward's (the forward has one psum): a failure in the second
  // call, and a stall there at --timeout 1.
  const std::string rank = std::to_string(3 / (8 / ranks()));
  const std::string device = "device 3 (rank " + rank + ") ";
  const Result one = run(with(grad, {"--inject", "fail:3@2"}));
  const Result many = mpirun(with(grad, {"--inject", "fail:3@2"}));
  BOOST_TEST_CONTEXT("fail:3@2 at R=" << ranks() << ", stderr: " << many.err) {
    BOOST_TEST(one.code == 3);
    BOOST_TEST(!many.killed);
    BOOST_TEST(many.code == one.code);
    BOOST_TEST(many.out == "");
    BOOST_TEST(meshrun_lines(many.err) ==
               std::vector<std::string>{"meshrun: " + device +
                                        "failed at psum #2 on 'batch': injected failure "
                                        "(--inject fail:3@2)"});
  }
  const Result stall_one = run(with(grad, {"--inject", "stall:3@2", "--timeout", "1"}));
  const Result stall = mpirun(with(grad, {"--inject", "stall:3@2", "--timeout", "1"}));
  BOOST_TEST_CONTEXT("stall:3@2 at R=" << ranks() << ", stderr: " << stall.err) {
    BOOST_TEST(stall_one.code == 3);
    BOOST_TEST(!stall.killed);
    BOOST_TEST(stall.code == stall_one.code);
    BOOST_TEST(stall.seconds < 30);
    BOOST_TEST(stall.out == "");
    const auto lines = meshrun_lines(stall.err);
    BOOST_REQUIRE(lines.size() == 1u);
    BOOST_TEST(has(lines[0], "psum #2 on 'batch'"), lines[0]);
    BOOST_TEST(has(lines[0], "timed out after 1000 ms"), lines[0]);
    BOOST_TEST(has(lines[0], ranks() == 1 ? "3 stalled by --inject" : device + "at psum #2"),
               lines[0]);
  }
  // psum #3 is in no call: each call counts afresh, as each run of one process's mesh does.
  same_as_one_process(with(grad, {"--inject", "fail:3@3"}));
  // A failed call's trace: its own inputs and each device's collectives up to the failure, not
  // the forward's; only the failure's line differs (it names the rank).
  const Result traced =
      mpirun(with(grad, {"--inject", "fail:3@2", "--trace=" + (dir / "f.trace")}));
  BOOST_TEST(traced.code == 3);
  const std::string failed_trace = slurp(dir / "f.trace");
  BOOST_TEST(has(failed_trace, "\n  device 0: #2 psum[axis_name='batch'] f32[6]"), failed_trace);
  BOOST_TEST(has(failed_trace, "\nfailed: " + device + "failed at psum #2"), failed_trace);

  // An equation failing between two calls (an int32 square beyond 2^24, after the first): exit
  // 2 and the line of one process, the others told between the calls; below 2^24 both calls run.
  const std::string square = "tests/mpi/programs/square-between-calls.json";
  same_run_and_trace({"run", square, "tests/mpi/programs/square-between-calls-small.json"}, dir);
  same_run_and_trace({"run", square, "tests/mpi/programs/square-between-calls-big.json"}, dir);

  // --profile: every call's phases on the main track, the last call's collectives on each
  // device's, as in one process.
  const Result timed_one = run(with(grad, {"--profile", dir / "one.json"}));
  const Result timed = mpirun(with(grad, {"--profile", dir / "many.json"}));
  BOOST_TEST(timed.code == 0, timed.err);
  BOOST_TEST(timed.out == timed_one.out);
  BOOST_REQUIRE(std::filesystem::exists(dir / "many.json"));
  const Timeline want = timeline(slurp(dir / "one.json")), got = timeline(slurp(dir / "many.json"));
  BOOST_TEST(std::count(got.phases.begin(), got.phases.end(), "run") == 2);
  BOOST_TEST((got.names == want.names));
  BOOST_TEST(got.phases == want.phases);
  BOOST_TEST((got.collectives == want.collectives));

  // No shard_map at all, on a mesh of one device ('data': 1): rank 0 computes, the others end.
  same_as_one_process({"run", "--exact", "tests/cli/programs/control/hostile/cond-index.json",
                       "tests/cli/programs/control/hostile/i1.json"});
  // ... and its --inject is checked against the mesh, as in one process (exit 2, not 4).
  same_as_one_process({"run", "tests/cli/programs/jit-twice.json", "tests/cli/programs/x8.json",
                       "--inject", "fail:9@1"});
}

// Under mpirun, stdout reaches the user through mpirun, which does not report a failed write of
// its own stdout (`mpirun ... > /dev/full` exits 0). `--output FILE` is rank 0's own checked
// write: the same bytes as one process's stdout, and a failed write is exit 6 on every rank.
// axis_index_groups (issue #50): the corpus's grouped programs (after JAX's shard_map tests) print
// one process's bytes at every R, their whole --trace too; subgroups listed out of rank order
// cross the ranks. groups-all-to-all's mesh has 4 devices: not at R = 8. The partial manual
// shard_maps too (issue #50): blocks replicated over the automatic axes, the psums within the
// devices that share them, and the nested shard_maps' gathers at their exit, across the ranks.
BOOST_AUTO_TEST_CASE(the_grouped_corpus_programs_print_the_same_bytes) {
  TempDir dir;
  for (const auto& [program, devices] :
       std::vector<std::pair<std::string, int>>{{"groups-reduce", 8},
                                                {"groups-gather", 8},
                                                {"groups-scatter", 8},
                                                {"groups-all-to-all", 4},
                                                // partial manual shard_maps (issue #50)
                                                {"partial-auto", 8},
                                                {"partial-auto-ppermute", 8},
                                                {"partial-nested", 8},
                                                {"partial-nested-3d", 8},
                                                {"partial-nested-grad", 8},
                                                {"vmap-spmd", 8},
                                                // jax.random inside a program (issue #49)
                                                {"dropout-rng", 8},
                                                {"shuffle-rng", 8},
                                                // a mesh declared in another order (issue #47)
                                                {"mesh-order", 8}}) {
    if (devices % ranks() != 0) continue;
    const std::string at = "tests/jax/corpus/" + program;
    same_run_and_trace({"run", at + ".json", at + "/case1.json", "--exact"}, dir);
  }
}

BOOST_AUTO_TEST_CASE(output_file_is_written_and_checked_by_rank_0) {
  TempDir dir;
  const std::string file = "cases/dp-step/example2.json";
  const Result one = run({"dp-step", file});
  const Result many = mpirun({"dp-step", "--output", dir / "r.json", file});
  BOOST_TEST(many.code == 0, many.err);
  BOOST_TEST(many.out == "");
  BOOST_TEST(slurp(dir / "r.json") == one.out);
  const Result full = mpirun({"dp-step", "--output", "/dev/full", file});
  BOOST_TEST(full.code == 6);
  BOOST_TEST(meshrun_lines(full.err) ==
                 std::vector<std::string>{
                     "meshrun: --output: cannot write /dev/full: No space left on device"},
             full.err);
}

BOOST_AUTO_TEST_CASE(input_errors_are_the_same_one_line_and_exit_code) {
  same_as_one_process({"dp-step", "cases/invalid/not-divisible.json"});
  same_as_one_process({"dp-step", "cases/dp-step/example1.json", "--inject", "fail:9@1"});
  same_as_one_process({"dp-step", "cases/dp-step/example1.json", "--inject", "fail:3@2"});
  same_as_one_process({"dp-step", "cases/dp-step/example1.json", "--atol", "0", "--rtol", "0"});
}

// A value error inside an interpreted body (an int32 result beyond 2^24, which meshrun holds
// exactly only below) is exit 2 in one process; under mpirun it was exit 3 (be40e9a: the ranks'
// outcome carried only "a mesh failure"), against docs/mpi.md's "the same exit code". The line
// names the failing device, which may differ (the first to fail), and then the same equation.
BOOST_AUTO_TEST_CASE(a_value_error_in_a_body_is_the_same_exit_code_as_in_one_process) {
  const std::vector<std::string> args = {"run", "tests/cli/programs/i32-inside.json",
                                         "tests/cli/programs/n-2-20.json"};
  const Result one = run(args);
  const Result many = mpirun(args);
  BOOST_TEST(one.code == 2, one.err);
  BOOST_TEST(!many.killed);
  BOOST_TEST(many.code == 2, many.err);
  BOOST_TEST(many.out == "");
  const std::vector<std::string> lines = meshrun_lines(many.err);
  BOOST_REQUIRE_EQUAL(lines.size(), 1u);
  const std::string what =
      "failed before its first collective: tests/cli/programs/i32-inside.json: "
      "exports[0].jaxpr.eqns[0].params.jaxpr.eqns[0] (mul): mul: an integer result is beyond "
      "2^24, which meshrun holds exactly";
  BOOST_TEST(lines[0].ends_with(what), lines[0]);
  BOOST_TEST(one.err.ends_with(what + "\n"), one.err);
}

// `mpirun -np R meshrun bench allreduce`: one table, printed by rank 0, for 8 devices spread over
// the R ranks (the variant says R x 8/R), every result verified; what it cannot do across ranks
// is exit 2 with one message.
BOOST_AUTO_TEST_CASE(bench_allreduce_across_ranks_prints_one_table) {
  const Result r = mpirun({"bench", "allreduce", "--max-bytes", "256", "--size-budget", "0.01",
                           "--total-budget", "10"});
  BOOST_TEST_CONTEXT("stderr: " << r.err) {
    BOOST_TEST(!r.killed);
    BOOST_TEST(r.code == 0);
    const std::string variant =
        "variant=psum/ranks=" + std::to_string(ranks()) + "x" + std::to_string(8 / ranks());
    BOOST_TEST(r.out.find(variant) != std::string::npos, r.out);
    BOOST_TEST(std::count(r.out.begin(), r.out.end(), '#') == 3, r.out);  // one header: 3 lines
    int rows = 0;
    for (std::size_t at = 0; (at = r.out.find("\n  ", at)) != std::string::npos; ++at) ++rows;
    BOOST_TEST(rows >= 1);
    BOOST_TEST(r.out.find("gather") != std::string::npos);
  }
  const Result op = mpirun({"bench", "allreduce", "--op", "all_gather", "--max-bytes", "16"});
  BOOST_TEST(op.code == 2);
  BOOST_TEST(meshrun_lines(op.err) ==
                 std::vector<std::string>{
                     "meshrun: --op: across ranks only psum is timed, not all_gather"},
             op.err);
}

// A program with equations around its shard_map: rank 0 evaluates them on the global arrays and
// the ranks run the shard_map (RootEngine and run_share, lib/io/mpi/mpi_engine.hpp). The gallery's
// closes-over-x (its x a constant operand) prints and grades as in one process, and so do a program
// computing before and after its shard_map and one of no shard_map; an equation failing before
// the shard_map ends every rank with its exit 2; two shard_maps run as in one process.
BOOST_AUTO_TEST_CASE(a_program_computing_around_its_shard_map_runs_across_ranks) {
  const std::string closes = "cases/submissions/dp-step/closes-over-x.json";
  for (const char* c : {"example1", "n8-d1-k1-lr-max", "example2"})
    same_as_one_process({"run", closes, std::string("cases/dp-step/") + c + ".json", "--exact"});
  // check is one process's: under mpirun of several ranks, one line and exit 2.
  const Result check = mpirun({"check", "--program", closes, "cases/dp-step"});
  if (ranks() == 1) {
    BOOST_TEST(check.code == 1);
    BOOST_TEST(has(check.out, "0 passed, 10 failed"), check.out);
  } else {
    BOOST_TEST(!check.killed);
    BOOST_TEST(check.code == 2);
    BOOST_TEST(check.out == "");
    BOOST_TEST(meshrun_lines(check.err) ==
                   std::vector<std::string>{"meshrun: check: runs in one process, not under "
                                            "mpirun (" +
                                            std::to_string(ranks()) +
                                            " ranks would each grade every case); under mpirun, "
                                            "run one case: meshrun run PROG.json CASE or meshrun "
                                            "<program> CASE"},
               check.err);
  }
  same_as_one_process(
      {"run", "tests/cli/programs/i32-outside.json", "tests/cli/programs/n-2-20.json"});
  same_as_one_process({"run", "tests/cli/programs/jit-twice.json", "tests/cli/programs/x8.json"});
  same_as_one_process({"run", "tests/cli/programs/jit-twice.json", "tests/cli/programs/x8.json",
                       "--inject", "fail:7@1"});  // never fired: exit 2, as in one process

  // double.json's x*2 shard_map, with x+x before it and neg after: y = -4x.
  TempDir dir;
  nlohmann::json p = meshrun::testing::parse_json(
      slurp(meshrun::testing::kSource + "/cases/invalid-programs/valid/double.json"));
  nlohmann::json& jx = p["exports"][0]["jaxpr"];
  const nlohmann::json type = jx["invars"][0]["type"];
  nlohmann::json shard = jx["eqns"][0];
  const auto eqn = [&](const char* prim, int in1, int in2, int out) {
    nlohmann::json e = {{"primitive", prim}, {"params", nlohmann::json::object()}};
    e["in"] = nlohmann::json::array({{{"var", in1}}});
    if (in2 >= 0) e["in"].push_back({{"var", in2}});
    e["out"] = nlohmann::json::array({{{"id", out}, {"type", type}}});
    return e;
  };
  shard["in"][0]["var"] = 5;
  jx["eqns"] = nlohmann::json::array({eqn("add", 0, 0, 5), shard, eqn("neg", 1, -1, 6)});
  jx["outvars"][0]["var"] = 6;
  const std::string around = dir.write("around.json", p.dump());
  const Result one = run({"run", around, "cases/invalid-programs/valid/double-case.json"});
  BOOST_TEST(one.out ==
                 "{\"y\":[-4.0,-8.0,-12.0,-16.0,-20.0,-24.0,-28.0,-32.0,-36.0,-40.0,-44.0,-48.0,"
                 "-52.0,-56.0,-60.0,-64.0]}\n",
             one.err);
  same_as_one_process({"run", around, "cases/invalid-programs/valid/double-case.json"});

  // Two shard_maps, the second on the first's result: y = 4x, across ranks as in one process
  // (rank 0 hands both calls to the ranks, one after the other).
  shard["in"][0]["var"] = 0;
  nlohmann::json again = shard;
  again["in"][0]["var"] = 1;
  again["out"][0]["id"] = 7;
  jx["eqns"] = nlohmann::json::array({shard, again});
  jx["outvars"][0]["var"] = 7;
  const std::string twice = dir.write("twice.json", p.dump());
  const std::vector<std::string> args = {"run", twice,
                                         "cases/invalid-programs/valid/double-case.json"};
  BOOST_TEST(run(args).out.starts_with("{\"y\":[4.0,8.0,"));
  same_as_one_process(args);
}

// The exported programs (cases/programs/, `meshrun run`): every case prints the bytes it prints
// in one process, at R ranks; a failure inside the interpreted body ends every rank with the one
// line of one process.
BOOST_AUTO_TEST_CASE(every_case_of_the_exported_programs_prints_the_same_bytes) {
  for (const char* program : {"dp-step", "tp-mlp", "mlp-train"}) {
    const std::string file = std::string("cases/programs/") + program + ".json";
    for (const std::string& c : cases_in(std::string("cases/") + program)) {
      same_as_one_process({"run", file, c, "--exact"});
    }
    same_as_one_process({"run", file, std::string("cases/") + program + "/example1.json"});
  }
  // A failure in the interpreted body: exit 3 and the line of one process, naming the rank.
  const std::vector<std::string> fail = {"run", "cases/programs/dp-step.json",
                                         "cases/dp-step/example1.json", "--inject", "fail:7@1"};
  const Result one = run(fail);
  const Result many = mpirun(fail);
  BOOST_TEST(one.code == 3);
  BOOST_TEST(many.code == 3);
  BOOST_TEST(many.out == "");
  BOOST_TEST(meshrun_lines(many.err).size() == 1u, many.err);
  BOOST_TEST(has(many.err, ranks() == 1 ? "device 7 "
                                        : "device 7 (rank " + std::to_string(ranks() - 1) + ")"),
             many.err);
  BOOST_TEST(has(many.err, "failed at psum #1 on 'data': injected failure (--inject fail:7@1)"),
             many.err);
}

// Indexing across ranks (issue #49): the corpus's hand-written psum_scatter (x.at[j].add, a
// scatter-add at a traced index, between ppermutes), the embedding + cross-entropy step (gathers
// forward, their scatter-adds in the backward shard_map) and the tutorial's pipeline
// (x.at[i].set between ppermutes, a mesh of 2: R = 1 and 2) print one process's bytes and trace,
// and are JAX's outputs (`expected`, checked at 6 decimals).
BOOST_AUTO_TEST_CASE(the_indexing_programs_run_across_ranks) {
  TempDir dir;
  std::vector<std::string> programs = {"psum-scatter-add", "embed-xent"};
  if (ranks() <= 2) programs.emplace_back("pipeline-pp");
  for (const std::string& p : programs) {
    const std::string file = "tests/jax/corpus/" + p + ".json";
    const std::string c = "tests/jax/corpus/" + p + "/case1.json";
    same_run_and_trace({"run", file, c, "--exact"}, dir);
    same_as_one_process({"run", file, c});
  }
}
