// The gallery's verdicts hold under mpirun (issue #30): `mpirun -np R meshrun run PROG.json CASE`
// gives each submission of cases/submissions/<exercise>/ the verdict its .expect commits -- the
// exit code, and the line `check --program` prints in one process (PASS / FAIL, the count of
// differing elements and the first of them, how many rules held and the first broken one), read
// back from what `run` printed and the rules its --trace lists -- and prints what the
// single-process run prints, byte for byte (stdout, meshrun's lines on stderr, the whole trace:
// every device's blocks and collectives as rank 0 gathered them).
//
// The rules that run the program again (b2 moved, the reference, lr doubled) and those on what a
// device holds run on rank 0 after the run, on the whole inputs it read: the re-runs on a mesh of
// threads in rank 0's process, as in one process (lib/grade/semantic_rules.cpp), so one code
// path grades both.
//
// R from MESHRUN_RANKS. Which submissions: MESHRUN_GALLERY=all runs every one of every exercise
// (`make mpi-gallery`, minutes: a launch of mpirun is about a second here); otherwise a fixed
// subset, one per kind of first broken rule and the right styles whose values cross ranks
// differently (a ppermute ring, a scatter and gather, replicas of check_vma=False), smaller at
// R = 8 (ctest mpi_gallery_r2, mpi_gallery_r8).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "mpi/mpirun.hpp"

using namespace meshrun::testing;
namespace fs = std::filesystem;

namespace {

// A submission each rule (or kind of right program) stands for; every name must exist.
const std::vector<std::string> kSubset = {
    "dp-step/right",
    "dp-step/right-ppermute-ring",
    "dp-step/right-scatter-gather",
    "dp-step/naive-no-pcast",       // the update is 8 times the mean gradient's (the reference)
    "dp-step/wrong-lr-zero-times",  // lr doubled: the update does not double
    "dp-step/wrong-gathers-x",      // what a device holds: all of x
    "dp-step/x-replicated",         // no full x reaches the body (the file)
    "dp-step/closes-over-x",        // computed around the shard_map (rank 0 evaluates)
    "tp-mlp/right",
    "tp-mlp/b2-once-device0",  // issue #30's first false FAIL
    "tp-mlp/right-ppermute-ring",
    "tp-mlp/right-b2-device0-no-vma",
    "tp-mlp/b2-every-device",           // b2 moved: out moves 8 times as far
    "tp-mlp/wrong-b2-device0-outside",  // replicas of out differ (check_vma=False)
    "tp-mlp/gathers-w1",                // what a device holds: all of w1
    "tp-mlp/wrong-hidden-gathered",     // hidden not left split (the trace)
    "mlp-train/right",
    "mlp-train/pmean-data-model",  // issue #30's second false FAIL
    "mlp-train/right-manual-ppermute-ring",
    "mlp-train/naive-no-pcast",         // the update is 2 times the mean gradient's
    "mlp-train/wrong-b2-every-device",  // b2 and y moved: the loss moves
    "mlp-train/wrong-gathers-w1",
    "mlp-train/wrong-x-replicated",
};
const std::vector<std::string> kHandful = {
    "dp-step/naive-no-pcast",          "dp-step/right-ppermute-ring", "tp-mlp/b2-every-device",
    "tp-mlp/wrong-b2-device0-outside", "mlp-train/pmean-data-model",  "mlp-train/naive-no-pcast",
};

std::vector<std::string> submissions() {
  const char* which = std::getenv("MESHRUN_GALLERY");
  if (which == nullptr || std::string(which) != "all") return ranks() >= 8 ? kHandful : kSubset;
  std::vector<std::string> all;
  for (const auto& dir : fs::directory_iterator(kSource + "/cases/submissions")) {
    if (!dir.is_directory()) continue;
    for (const auto& e : fs::directory_iterator(dir.path())) {
      if (e.path().extension() != ".json") continue;
      all.push_back(dir.path().filename().string() + "/" + e.path().stem().string());
    }
  }
  std::sort(all.begin(), all.end());
  return all;
}

// The line `check --program PROG CASE` prints for the case, rebuilt from what `meshrun run PROG
// CASE --trace=FILE` printed: the exit code (0 PASS, 1 FAIL), meshrun's lines on stderr (the
// differing elements, first one first, then "N of M output elements differ from expected") and
// the trace's rules ("  ok: ..." and "  FAILED: ..." after "structure:").
std::string verdict_line(const std::string& c, int code, const std::string& err,
                         const std::string& trace) {
  const std::vector<std::string> lines = meshrun_lines(err);
  std::size_t differ = 0;
  for (const std::string& l : lines) {
    const std::size_t of = l.find(" of ");
    if (l.ends_with(" output elements differ from expected") && of != std::string::npos)
      differ = std::stoul(l.substr(9, of - 9));
  }
  std::string numbers = "numbers ok";
  if (differ > 0 && !lines.empty()) {
    numbers = "numbers: " + std::to_string(differ) +
              (differ == 1 ? " element differs" : " elements differ") +
              " (first: " + lines.front().substr(9) + ")";
  }
  std::size_t rules = 0;
  std::vector<std::string> failed;
  bool in_rules = false;
  std::istringstream in(trace);
  for (std::string l; std::getline(in, l);) {
    if (l == "structure:") in_rules = true;
    if (!in_rules) continue;
    if (l.starts_with("  ok: ")) ++rules;
    if (l.starts_with("  FAILED: ")) {
      ++rules;
      failed.push_back(l.substr(10));
    }
  }
  const std::string structure =
      failed.empty() ? "structure ok (" + std::to_string(rules) + " rules)"
                     : "structure: " + std::to_string(failed.size()) + " of " +
                           std::to_string(rules) + " rules broken (first: " + failed.front() + ")";
  const std::string word = code == 0 ? "PASS" : code == 1 ? "FAIL" : "ERROR";
  return word + " " + c + ": " + numbers + "; " + structure;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_gallery_submission_gets_its_verdict_under_mpirun) {
  const TempDir tmp;
  const std::vector<std::string> names = submissions();
  BOOST_REQUIRE(!names.empty());
  for (const std::string& name : names) {
    const std::string file = "cases/submissions/" + name + ".json";
    const std::string expect_path = kSource + "/cases/submissions/" + name + ".expect";
    BOOST_REQUIRE_MESSAGE(fs::exists(kSource + "/" + file) && fs::exists(expect_path),
                          name << ": no such submission (.json and .expect)");
    const std::vector<std::string> expect = lines_of(slurp(expect_path));
    BOOST_REQUIRE_MESSAGE(expect.size() == 3, expect_path << " must have 3 lines");
    // Line 1: `check --program {} CASE`, the case its verdict is on.
    const std::string c = expect[0].substr(expect[0].rfind(' ') + 1);
    const int code = std::stoi(expect[1]);
    const Result one = run({"run", file, c, "--trace=" + (tmp / "one.trace")});
    const Result many = mpirun({"run", file, c, "--trace=" + (tmp / "many.trace")});
    const std::string trace = slurp(tmp / "many.trace");
    BOOST_TEST_CONTEXT(name << " on " << c << " at R=" << ranks() << ", stderr: " << many.err) {
      BOOST_TEST(!many.killed);
      BOOST_TEST(many.code == code);
      BOOST_TEST(verdict_line(c, many.code, many.err, trace) == expect[2]);
      // And what the single-process run prints, byte for byte.
      BOOST_TEST(one.code == code);
      BOOST_TEST(many.out == one.out);
      BOOST_TEST(meshrun_lines(many.err) == meshrun_lines(one.err));
      BOOST_TEST(trace == slurp(tmp / "one.trace"));
    }
    fs::remove(tmp / "one.trace");
    fs::remove(tmp / "many.trace");
  }
}
