// Control flow in program files (issue #48): scan, while and cond, inside and outside shard_map
// bodies, with collectives in their bodies; and the hostile ones, each one line and exit 2 (or the
// mesh's exit 3 for devices that take different branches around a collective), never a hang.
// tests/cli/programs/control/make_programs.py wrote the files and their cases, `expected` computed
// there by numpy in float32, step by step in each program's order: meshrun must give those bits.
// The wrappers JAX writes (remat2, closed_call, reshard, ...) are in tests/jax/corpus/.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "support/cases.hpp"
#include "support/run_meshrun.hpp"

namespace {

using meshrun::testing::has;
using meshrun::testing::json_files;
using meshrun::testing::kSource;
using meshrun::testing::lines_of;
using meshrun::testing::Result;
using meshrun::testing::run;

const std::string kDir = "tests/cli/programs/control";

std::string file(const std::string& rel) { return kSource + "/" + kDir + "/" + rel; }

// One line on stderr, starting "meshrun: ", holding `part`.
void expect_one_line(const Result& r, const std::string& part) {
  const std::vector<std::string> lines = lines_of(r.err);
  BOOST_TEST(lines.size() == 1u, r.err);
  BOOST_TEST(has(r.err, "meshrun: "), r.err);
  BOOST_TEST(has(r.err, part), r.err);
  BOOST_TEST(r.out.empty(), r.out);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(control_flow)

// Every case of every program, bit for bit: --atol 0 --rtol 0 against numpy's float32 steps.
BOOST_AUTO_TEST_CASE(every_program_gives_the_references_bits) {
  for (const char* name : {"ring-scan", "while-double", "cond-psum", "scan-reverse", "plain-while",
                           "ring-scan-long"}) {
    const Result r = run({"check", "--atol", "0", "--rtol", "0", "--program",
                          file(std::string(name) + ".json"), file(name)});
    BOOST_TEST(r.code == 0, name << ": " << r.out << r.err);
    BOOST_TEST(has(r.out, "2 passed, 0 failed"), name << ": " << r.out);
  }
}

// A plain case ({"input": ...}, no problem nor name) runs with the program given.
BOOST_AUTO_TEST_CASE(a_plain_case_runs_with_the_program_given) {
  meshrun::testing::TempDir dir;
  const std::string c = dir.path + "/plain.json";
  {
    std::ofstream f(c);
    f << R"({"input": {"x": [[1,2],[3,4],[5,6],[7,8],[9,10],[11,12],[13,14],[15,16]]}})";
  }
  const Result r = run({"run", "--exact", file("ring-scan.json"), c});
  BOOST_TEST(r.code == 0, r.err);
  // Every row is the sum of the eight (exact in float32).
  BOOST_TEST(r.out ==
                 "{\"y\":[[64.0,72.0],[64.0,72.0],[64.0,72.0],[64.0,72.0],[64.0,72.0],"
                 "[64.0,72.0],[64.0,72.0],[64.0,72.0]]}\n",
             r.out);
  // The input object alone, too.
  {
    std::ofstream f(c);
    f << R"({"x": [[1,2],[3,4],[5,6],[7,8],[9,10],[11,12],[13,14],[15,16]]})";
  }
  const Result bare = run({"run", "--exact", file("ring-scan.json"), c});
  BOOST_TEST(bare.code == 0, bare.err);
  BOOST_TEST(bare.out == r.out);
}

// --trace shows a loop's collectives once, with the count, not one line per iteration.
BOOST_AUTO_TEST_CASE(the_trace_folds_a_loops_collectives) {
  const Result r = run({"run", "--trace", file("ring-scan.json"), file("ring-scan/case1.json")});
  BOOST_TEST(r.code == 0, r.err);
  // 7 ppermutes per device: under the folding threshold (16), one line each.
  BOOST_TEST(has(r.err, "device 0: #7 ppermute[axis_name='data']"), r.err);
  // 23 of them: one entry with the count and the collective once, per device.
  const Result l =
      run({"run", "--trace", file("ring-scan-long.json"), file("ring-scan-long/case1.json")});
  BOOST_TEST(l.code == 0, l.err);
  BOOST_TEST(has(l.err,
                 "  device 3: #1-#23, 23 times this collective (a loop):\n"
                 "    ppermute[axis_name='data'] f32[1,2]{V:data} -> f32[1,2]{V:data}  8 "
                 "bytes\n  device 4: #1-#23"),
             l.err);
  BOOST_TEST(!has(l.err, "device 0: #2 ppermute"), l.err);
}

BOOST_AUTO_TEST_CASE(a_while_that_never_ends_stops_at_its_limit) {
  const Result r = run({"run", "--max-while-iterations", "1000", file("hostile/while-forever.json"),
                        kSource + "/tests/cli/programs/control/hostile/x2.json"});
  BOOST_TEST(r.code == 2, r.err);
  expect_one_line(r, "while: still running after 1000 iterations");
  BOOST_TEST(has(r.err, "--max-while-iterations N raises it"), r.err);
  BOOST_TEST(has(r.err, "while-forever.json"), r.err);
}

BOOST_AUTO_TEST_CASE(a_scan_of_a_billion_steps_is_refused_before_it_runs) {
  const Result r =
      run({"run", file("hostile/scan-huge.json"), kSource + "/" + kDir + "/hostile/x2.json"});
  BOOST_TEST(r.code == 2, r.err);
  expect_one_line(r, "scan of 1000000000 iterations");
  BOOST_TEST(has(r.err, "--max-flops N raises it"), r.err);
  BOOST_TEST(r.seconds < 10.0);
}

BOOST_AUTO_TEST_CASE(a_branch_index_out_of_range_is_refused) {
  const Result r =
      run({"run", file("hostile/cond-index.json"), kSource + "/" + kDir + "/hostile/i5.json"});
  BOOST_TEST(r.code == 2, r.err);
  expect_one_line(r, "cond: index 5 is outside its 2 branches");
  const Result ok = run({"run", "--exact", file("hostile/cond-index.json"),
                         kSource + "/" + kDir + "/hostile/i1.json"});
  BOOST_TEST(ok.code == 0, ok.err);
  BOOST_TEST(ok.out == "{\"y\":[2.0,4.0]}\n", ok.out);
}

BOOST_AUTO_TEST_CASE(a_carry_that_changes_type_is_refused_before_the_run) {
  const Result r =
      run({"run", file("hostile/carry-changes.json"), kSource + "/" + kDir + "/hostile/x4.json"});
  BOOST_TEST(r.code == 2, r.err);
  expect_one_line(r, "scan: carry 0 enters as f32[4] but its body returns f32[2]");
}

// Device 0 takes a branch with a psum, the others one without: the mismatched-collective error
// as soon as the others' bodies return, exit 3, not a wait for the deadline (60 s here).
BOOST_AUTO_TEST_CASE(devices_that_diverge_around_a_collective_get_the_mismatch_error) {
  const Result r = run({"run", "--timeout", "60", file("hostile/diverging-cond.json"),
                        kSource + "/" + kDir + "/hostile/x8x2.json"});
  BOOST_TEST(!r.killed);
  BOOST_TEST(r.code == 3, r.err);
  BOOST_TEST(lines_of(r.err).size() == 1u, r.err);
  BOOST_TEST(has(r.err, "mismatched collectives on 'data'"), r.err);
  BOOST_TEST(has(r.err,
                 "left its body without calling psum #1 on 'data', which device 0 called at "
                 "exports[0].jaxpr.eqns[0].params.jaxpr.eqns[3].params.branches[1].eqns[0]"),
             r.err);
  BOOST_TEST(r.seconds < 30.0);
}

// Device 0 psums from one branch, the others from the other: the same op and size from two
// places of the program are not summed together (before, the run printed a sum of both).
BOOST_AUTO_TEST_CASE(the_same_collective_from_two_places_is_a_mismatch) {
  const Result r = run({"run", "--timeout", "60", file("hostile/diverging-sites.json"),
                        kSource + "/" + kDir + "/hostile/x8x2.json"});
  BOOST_TEST(r.code == 3, r.err);
  BOOST_TEST(r.out.empty(), r.out);
  BOOST_TEST(lines_of(r.err).size() == 1u, r.err);
  BOOST_TEST(has(r.err,
                 "mismatched collectives on 'data': device 0 called psum #1 with 2 "
                 "elements at exports[0].jaxpr.eqns[0].params.jaxpr.eqns[3].params."
                 "branches[1].eqns[1], device "),
             r.err);
  BOOST_TEST(has(r.err, ".params.branches[0].eqns[0]"), r.err);
}

BOOST_AUTO_TEST_SUITE_END()
