// `meshrun bench allreduce` through the binary: the table in the peers' format (what
// ../shared/peers/summarize.py reads), results verified (the wrong column is 0), --json, and
// bad flags. Tiny sizes and budgets: this checks the command, it times nothing.
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_meshrun.hpp"
#include "support/json.hpp"

using meshrun::testing::Result;
using meshrun::testing::run;

namespace {
using meshrun::testing::lines_of;
}  // namespace

BOOST_AUTO_TEST_CASE(table_in_the_peers_format) {
  for (const std::string op : {"psum", "pmean", "all_gather", "psum_scatter"}) {
    const Result r = run({"bench", "allreduce", "--op", op, "--devices", "4", "--max-bytes", "4096",
                          "--size-budget", "0.01"});
    BOOST_TEST(r.code == 0, op << ": " << r.err);
    const auto lines = lines_of(r.out);
    BOOST_REQUIRE(lines.size() >= 4u);
    BOOST_TEST(lines[0].rfind("# peer=meshrun variant=" + op, 0) == 0u, lines[0]);
    BOOST_TEST(lines[0].find("participants=4") != std::string::npos, lines[0]);
    BOOST_TEST(
        lines[2].find("bytes     elems  iters   median_us     mean_us      p90_us  algbw_GB/s  "
                      "busbw_GB/s  wrong") != std::string::npos,
        lines[2]);
    for (std::size_t i = 3; i < lines.size(); ++i) {
      std::istringstream row(lines[i]);
      double bytes, elems, iters, median, mean, p90, algbw, busbw;
      long wrong = -1;
      row >> bytes >> elems >> iters >> median >> mean >> p90 >> algbw >> busbw >> wrong;
      BOOST_TEST(!row.fail(), lines[i]);
      BOOST_TEST(wrong == 0, lines[i]);
      BOOST_TEST(bytes <= 4096.0, lines[i]);
      BOOST_TEST(median > 0.0, lines[i]);
    }
  }
}

// --groups K (issue #50): every op over axis_index_groups of K devices, checked element by element
// against the sums, extrema and blocks of each device's own group before and after the timing;
// a K that does not divide --devices is exit 2.
BOOST_AUTO_TEST_CASE(grouped_ops_are_verified_and_timed) {
  for (const std::string op : {"psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter"}) {
    const Result r = run({"bench", "allreduce", "--op", op, "--groups", "4", "--devices", "8",
                          "--max-bytes", "65536", "--size-budget", "0.01"});
    BOOST_TEST(r.code == 0, op << ": " << r.err);
    const auto lines = lines_of(r.out);
    BOOST_REQUIRE(lines.size() >= 4u);
    BOOST_TEST(lines[0].find("/groups=4/") != std::string::npos, lines[0]);
    for (std::size_t i = 3; i < lines.size(); ++i) {
      std::istringstream row(lines[i]);
      double bytes, elems, iters, median, mean, p90, algbw, busbw;
      long wrong = -1;
      row >> bytes >> elems >> iters >> median >> mean >> p90 >> algbw >> busbw >> wrong;
      BOOST_TEST(!row.fail(), lines[i]);
      BOOST_TEST(wrong == 0, op << ": " << lines[i]);
    }
  }
  const Result bad = run({"bench", "allreduce", "--groups", "3", "--devices", "8"});
  BOOST_TEST(bad.code == 2);
  BOOST_TEST(lines_of(bad.err).size() == 1u, bad.err);
  BOOST_TEST(bad.err.find("--groups") != std::string::npos, bad.err);
}

BOOST_AUTO_TEST_CASE(json_document) {
  const Result r =
      run({"bench", "allreduce", "--json", "--max-bytes", "256", "--size-budget", "0.01"});
  BOOST_TEST(r.code == 0, r.err);
  const auto j = meshrun::testing::parse_json(r.out);
  BOOST_TEST(j.at("peer") == "meshrun");
  BOOST_TEST(j.at("participants") == 8);
  BOOST_REQUIRE(j.at("rows").size() == 3u);  // 4, 32 and 256 bytes
  for (const auto& row : j.at("rows")) BOOST_TEST(row.at("wrong") == 0);
}

BOOST_AUTO_TEST_CASE(bad_flags_exit_2) {
  const Result op = run({"bench", "allreduce", "--op", "ppermute"});
  BOOST_TEST(op.code == 2);
  BOOST_TEST(op.out.empty());
  const Result devices = run({"bench", "allreduce", "--devices", "0"});
  BOOST_TEST(devices.code == 2);
  BOOST_TEST(devices.out.empty());
  // Each refused with its own flag named, before any size is timed: "-1" is not 2^64 - 1, and
  // NaN is not a positive number of seconds.
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--min-bytes", "-1"},
                                             {"--max-bytes", "0x10"},
                                             {"--size-budget", "nan"},
                                             {"--total-budget", "inf"},
                                             {"--timeout", "nan"},
                                             {"--devices", "1.5"}}) {
    std::vector<std::string> cmd{"bench", "allreduce"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    const Result r = run(cmd);
    BOOST_TEST(r.code == 2, args[0] << " " << args[1]);
    BOOST_TEST(r.out.empty(), args[0] << " " << args[1]);
    BOOST_TEST(r.err.starts_with("meshrun: " + args[0] + ": must be "), r.err);
  }
  // A range that holds none of the table's sizes times nothing: not an empty table and exit 0.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--min-bytes", "5", "--max-bytes", "7"},
           {"--min-bytes", "3", "--max-bytes", "3"},
           {"--op", "psum_scatter", "--devices", "3", "--min-bytes", "4", "--max-bytes", "8"}}) {
    std::vector<std::string> cmd{"bench", "allreduce"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    const Result r = run(cmd);
    BOOST_TEST(r.code == 2, r.err);
    BOOST_TEST(r.out.empty(), r.out);
    BOOST_TEST(r.err.starts_with("meshrun: --min-bytes: "), r.err);
    BOOST_TEST(meshrun::testing::has(r.err, "selects none of the table's sizes (4, 32, 256, 4096,"),
               r.err);
  }
  const Result one = run({"bench", "allreduce", "--min-bytes", "4", "--max-bytes", "4",
                          "--size-budget", "0.01"});  // and a range holding one size times it
  BOOST_TEST(one.code == 0, one.err);
  BOOST_TEST(meshrun::testing::has(one.out, "\n           4 "), one.out);
}

// `meshrun bench programs --quick`: one row per program and input form (json, npy, and the npy
// case run through the exported program), each the --timings line of
// a real run of a case it wrote (kept with --keep, so the rows can be checked against the files).
BOOST_AUTO_TEST_CASE(programs_sweep_runs_every_program_on_json_and_npy) {
  meshrun::testing::TempDir dir;
  const Result r =
      run({"bench", "programs", "--quick", "--rounds", "1", "--json", "--keep", dir.path});
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const nlohmann::json rows = meshrun::testing::parse_json(r.out);
  BOOST_REQUIRE(rows.is_array());
  // dp-step, tp-mlp, mlp-train x json, npy, and the npy case through cases/programs' file (run)
  BOOST_TEST(rows.size() == 9u);
  std::set<std::string> seen;
  for (const auto& row : rows) {
    seen.insert(row.at("program").get<std::string>() + "/" + row.at("input").get<std::string>());
    BOOST_TEST(std::filesystem::exists(row.at("case").get<std::string>()));
    BOOST_TEST(row.at("flops").get<double>() > 0);
    for (const char* phase : {"read_s", "shard_s", "compute_s", "write_s"})
      BOOST_TEST(row.at(phase).get<double>() <= row.at("total_s").get<double>(), phase);
    // The process's CPU seconds (wait4): it read, cut and computed, so more than nothing -- and
    // less than a minute for the small sizes on any machine.
    BOOST_TEST(row.at("cpu_s").get<double>() > 0);
    BOOST_TEST(row.at("cpu_s").get<double>() < 60);
  }
  BOOST_TEST(seen.size() == 9u);
  BOOST_TEST(seen.count("dp-step/run") == 1u);
}
