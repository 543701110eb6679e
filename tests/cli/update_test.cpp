// `meshrun check --update` (issue #12): blessing expected values. The scanner that finds the
// `expected` bytes is tested directly; the command through the binary: a corrupted or missing
// `expected` is rewritten so that a zero-tolerance check passes, every byte outside `expected`
// stays, and what must be refused is refused with the file untouched. A run that breaks a
// structural rule cannot be made from a case file (the programs are built in and keep their
// rules on every mesh a case can ask for), so that refusal is tested on bless_refusal, the one
// place --update asks, with a deliberately wrong program.
#include <sys/stat.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <limits>
#include <string>

#include "io/compare.hpp"
#include "io/expected_patch.hpp"
#include "mesh/mesh.hpp"
#include "programs/program.hpp"
#include "support/run_meshrun.hpp"
#include "support/errors.hpp"

namespace {

using meshrun::find_expected;
using meshrun::with_expected;
using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;

using meshrun::testing::has;

// dp-step's documented example 1, spaced and indented by hand, with a key after `expected` so
// that bytes on both sides of it are checked.
const std::string kHead =
    "{\n  \"problem\": \"dp-step\",\n  \"name\": \"example1\",\n"
    "  \"input\": {\"w\": [[0.0]], \"b\": [0.0],\n"
    "            \"x\": [[1.0],[2.0],[3.0],[4.0],[5.0],[6.0],[7.0],[8.0]],\n"
    "            \"y\": [[3.0],[5.0],[7.0],[9.0],[11.0],[13.0],[15.0],[17.0]], \"lr\": 0.01},\n"
    "  \"expected\": ";
const std::string kTail = ",\n  \"description\": \"a } and \\\" and [ in a string\"\n}\n";

}  // namespace

// ---- the scanner -----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(the_scanner_finds_the_top_level_expected_value) {
  const std::string text = kHead + "{\"w\": [[9.0]], \"b\": [1], \"loss\": 3}" + kTail;
  const auto span = find_expected(text);
  BOOST_TEST(span.present);
  BOOST_TEST(span.begin == kHead.size());
  BOOST_TEST(text.substr(span.end) == kTail);
  // Only the top level counts: an "expected" key inside input, or as a string value, is not it.
  const std::string nested = R"({"input": {"expected": [1]}, "name": "expected"})";
  const auto none = find_expected(nested);
  BOOST_TEST(!none.present);
  BOOST_TEST(none.begin == nested.size() - 1);  // just after the last value: before the '}'
  BOOST_TEST(with_expected(nested, "{}") ==
             R"({"input": {"expected": [1]}, "name": "expected","expected":{}})");
  BOOST_TEST(with_expected(" { } ", "[1]") == R"( { "expected":[1]} )");
  // A key spelled with an escape is the same key to the case reader, so to the scanner.
  BOOST_TEST(with_expected(R"({"\u0065xpected": 1, "a": 2})", "5") ==
             R"({"\u0065xpected": 5, "a": 2})");
}

BOOST_AUTO_TEST_CASE(the_scanner_refuses_what_is_not_one_object) {
  for (const std::string bad :
       {"", "[]", "{", R"({"a": )", R"({"a": "x)", R"({"a": [1, 2})", R"({"a": 1} x)",
        R"({"expected": 1, "expected": 2})", R"({"a" 1})"}) {
    BOOST_CHECK_THROW(find_expected(bad), meshrun::InputError);
  }
}

// ---- the command -----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(update_round_trips_to_a_zero_tolerance_pass_keeping_every_other_byte) {
  TempDir dir;
  const std::string corrupt =
      dir.write("corrupt.json", kHead + "{\"w\": [[9.0]], \"b\": [1], \"loss\": 3}" + kTail);
  const std::string missing =
      dir.write("missing.json", kHead.substr(0, kHead.rfind(',')) + "\n}\n");
  chmod(corrupt.c_str(), 0640);
  // Graded as it stands: one FAIL, one ERROR (nothing to grade against).
  BOOST_TEST(run({"check", dir.path}).code == 1);

  const Result r = run({"check", "--update", dir.path});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.err.empty(), r.err);
  // 9.0 -> 1.11 is the largest change (the documented w); loss 3 -> 121 is larger: the summary
  // names the largest.
  BOOST_TEST(has(r.out, "UPDATED " + corrupt +
                            ": 3 of 3 elements changed (3 beyond tolerance), "
                            "largest change 118.0 at loss (3.0 -> 121.0)\n"),
             r.out);
  BOOST_TEST(has(r.out, "UPDATED " + missing + ": expected written (3 elements, none before)\n"),
             r.out);
  BOOST_TEST(r.out.ends_with("2 updated, 0 unchanged, 0 refused\n"), r.out);

  // Every byte outside `expected` kept; the new value in --exact form (b is 0.19999999 in
  // float32, as the torch peer also computes it).
  const std::string blessed = slurp(corrupt);
  BOOST_TEST(blessed == kHead + R"({"w":[[1.11]],"b":[0.19999999],"loss":121.0})" + kTail);
  BOOST_TEST(slurp(missing) == kHead.substr(0, kHead.rfind(',')) +
                                   R"(,"expected":{"w":[[1.11]],"b":[0.19999999],"loss":121.0})" +
                                   "\n}\n");
  struct stat st {};
  BOOST_TEST(stat(corrupt.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0640u);  // permissions kept across the rename

  // The round trip: exact at zero tolerance, and the documented values at the default one.
  const Result exact = run({"check", "--atol", "0", "--rtol", "0", dir.path});
  BOOST_TEST(exact.code == 0, exact.out);
  BOOST_TEST(exact.out.ends_with("2 passed, 0 failed\n"));
  // A second bless finds nothing to change and writes nothing.
  const Result again = run({"check", "--update", "--atol", "0", "--rtol", "0", dir.path});
  BOOST_TEST(again.out.ends_with("0 updated, 2 unchanged, 0 refused\n"), again.out);
  BOOST_TEST(slurp(corrupt) == blessed);
  BOOST_TEST(std::distance(std::filesystem::directory_iterator(dir.path), {}) ==
             2);  // no temp files
}

BOOST_AUTO_TEST_CASE(update_leaves_numbers_within_tolerance_alone) {
  TempDir dir;
  // The documented example as written: b 0.2 is within 1e-5 of 0.19999999.
  const std::string text = slurp(meshrun::testing::kSource + "/cases/dp-step/example1.json");
  const std::string c = dir.write("c.json", text);
  const Result r = run({"check", "--update", c});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(r.out ==
             "UNCHANGED " + c + ": numbers within tolerance\n0 updated, 1 unchanged, 0 refused\n");
  BOOST_TEST(slurp(c) == text);
}

BOOST_AUTO_TEST_CASE(update_refuses_errors_non_finite_results_and_unreadable_cases) {
  TempDir dir;
  const std::string stale = kHead + "{\"w\": [[9.0]], \"b\": [1], \"loss\": 3}" + kTail;
  const std::string failing = dir.write("failing.json", stale);
  const Result failed = run({"check", "--update", "--inject", "fail:2@1", failing});
  BOOST_TEST(failed.code == 1);
  BOOST_TEST(failed.out == "REFUSED " + failing +
                               ": device 2 failed at pmean #1 on 'data': injected failure "
                               "(--inject fail:2@1)\n0 updated, 0 unchanged, 1 refused\n");
  BOOST_TEST(slurp(failing) == stale);

  const std::string overflow = dir.write(
      "overflow.json",
      R"({"problem":"dp-step","name":"overflow","input":{"w":[[3.4028235e38]],"b":[0.0],)"
      R"("x":[[1],[2],[3],[4],[5],[6],[7],[8]],"y":[[1],[2],[3],[4],[5],[6],[7],[8]],"lr":1e38}})");
  const std::string before = slurp(overflow);
  const Result inf = run({"check", "--update", overflow});
  BOOST_TEST(inf.code == 1);
  BOOST_TEST(has(inf.out, "REFUSED " + overflow + ": output w[0][0] is -inf"), inf.out);
  BOOST_TEST(slurp(overflow) == before);

  const std::string broken = dir.write("broken.json", "{\"problem\": \"dp-step\"");
  const Result bad = run({"check", "--update", broken});
  BOOST_TEST(bad.code == 1);
  BOOST_TEST(has(bad.out, "REFUSED " + broken + ": "), bad.out);
  BOOST_TEST(slurp(broken) == "{\"problem\": \"dp-step\"");

  // A refused case does not stop the others from being blessed; the exit code still says one was.
  const Result mixed = run({"check", "--update", failing, overflow});
  BOOST_TEST(mixed.code == 1);
  BOOST_TEST(mixed.out.ends_with("1 updated, 0 unchanged, 1 refused\n"), mixed.out);
  BOOST_TEST(slurp(failing) != stale);
  // --update grades nothing, so it takes no report files.
  BOOST_TEST(run({"check", "--update", "--junit", dir / "r.xml", failing}).code == 2);
}

// dp-step with x and y replicated: every device takes the full batch, and the mean of equal
// full-batch gradients is the right one -- the right numbers from a wrong program, which breaks
// input_split. Such a result is never blessed, whatever its numbers.
BOOST_AUTO_TEST_CASE(update_refuses_a_result_that_broke_a_structural_rule) {
  using namespace meshrun;
  const ProgramDef& right = *find_program("dp-step");
  ProgramDef wrong = right;
  wrong.inputs[2].spec = P();
  wrong.inputs[3].spec = P();
  std::vector<float> x, y;
  for (int i = 1; i <= 8; ++i) {
    x.push_back(static_cast<float>(i));
    y.push_back(static_cast<float>(2 * i + 1));
  }
  const std::vector<Tensor> in = {Tensor({1, 1}, {0.0f}), Tensor({1}, {0.0f}), Tensor({8, 1}, x),
                                  Tensor({8, 1}, y), Tensor::scalar(0.01f)};
  const auto run_on = [&](const ProgramDef& p, StructuralVerdict& verdict) {
    Mesh mesh(8, p.axis);
    Trace trace;
    std::vector<Tensor> out = shard_map(mesh, p, in, &trace);
    verdict = check_structure(p.structure, trace);
    return out;
  };
  StructuralVerdict kept, broken;
  const std::vector<Tensor> good = run_on(right, kept);
  const std::vector<Tensor> bad = run_on(wrong, broken);
  BOOST_TEST(compare_outputs(right, bad, good, 1e-6, 1e-6).empty());  // numbers alone pass it
  BOOST_TEST(bless_refusal(right, good, kept) == "");
  const std::string why = bless_refusal(wrong, bad, broken);
  BOOST_TEST(why.starts_with(
                 "structure: every device received only its block of x split along dimension 0"),
             why);
  BOOST_TEST(has(why, "device 0 held f32[8,1] (the full x), expected f32[1,1]"), why);
  // A non-finite number is refused too; a broken rule is named first.
  std::vector<Tensor> inf = bad;
  inf[2].data[0] = std::numeric_limits<float>::infinity();
  BOOST_TEST(bless_refusal(right, inf, kept).starts_with("output loss is "),
             bless_refusal(right, inf, kept));
  BOOST_TEST(bless_refusal(wrong, inf, broken) == why);
}

BOOST_AUTO_TEST_CASE(without_update_nothing_is_written) {
  TempDir dir;
  const std::string stale = kHead + "{\"w\": [[9.0]], \"b\": [1], \"loss\": 3}" + kTail;
  const std::string c = dir.write("c.json", stale);
  BOOST_TEST(run({"check", c}).code == 1);
  BOOST_TEST(run({"dp-step", c}).code == 1);
  BOOST_TEST(slurp(c) == stale);
  BOOST_TEST(std::distance(std::filesystem::directory_iterator(dir.path), {}) == 1);
}
