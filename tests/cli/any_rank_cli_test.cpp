// Arrays of any rank JAX allows, up to 8 dimensions (issue 48.4), end to end through the binary:
// program files whose inputs and outputs have rank 3 and 4 (tests/cli/programs/rank3-double.json,
// a shard_map of x f32[A,N,C] under P(None, 'data'); rank4-around.json, equations around a
// shard_map of x f32[N,B,H,C] under P('data', None, 'model') on a 2-D mesh), their cases inline
// and from .npy files, results on stdout, -o and --save-npy, check against expected and
// check --update, --trace and --show-sharding, and the one-line refusals: a rank-40 array, a ragged
// one, a program file's input of more than 8 dimensions.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/run_meshrun.hpp"

namespace fs = std::filesystem;

namespace {

using meshrun::testing::has;
using meshrun::testing::kSource;
using meshrun::testing::lines_of;
using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;

const std::string kDir = "tests/cli/programs/";
const std::string kProg3 = kDir + "rank3-double.json";
const std::string kCase3 = kDir + "rank3-case.json";
const std::string kNpyCase3 = kDir + "rank3-npy-case.json";
const std::string kProg4 = kDir + "rank4-around.json";
const std::string kCase4 = kDir + "rank4-case.json";

// y = 2 x and s = x summed over dimension 1, for x = 1..24 as f32[2,4,3].
const std::string kOut3 =
    R"({"y":[[[2.0,4.0,6.0],[8.0,10.0,12.0],[14.0,16.0,18.0],[20.0,22.0,24.0]],)"
    R"([[26.0,28.0,30.0],[32.0,34.0,36.0],[38.0,40.0,42.0],[44.0,46.0,48.0]]],)"
    R"("s":[[22.0,26.0,30.0],[70.0,74.0,78.0]]})"
    "\n";

// y = -2 x for x = 1..16 as f32[2,2,2,2], yt its transpose (3, 2, 1, 0), r y summed over 0 and 2.
const std::string kOut4 = R"({"y":[[[[-2.0,-4.0],[-6.0,-8.0]],[[-10.0,-12.0],[-14.0,-16.0]]],)"
                          R"([[[-18.0,-20.0],[-22.0,-24.0]],[[-26.0,-28.0],[-30.0,-32.0]]]],)"
                          R"("yt":[[[[-2.0,-18.0],[-10.0,-26.0]],[[-6.0,-22.0],[-14.0,-30.0]]],)"
                          R"([[[-4.0,-20.0],[-12.0,-28.0]],[[-8.0,-24.0],[-16.0,-32.0]]]],)"
                          R"("r":[[-48.0,-56.0],[-80.0,-88.0]]})"
                          "\n";

// The case file at kCase3 with `from` replaced by `to`, written into `dir` as `name`.
std::string case3_with(const TempDir& dir, const std::string& name, const std::string& from,
                       const std::string& to) {
  std::string text = slurp(kSource + "/" + kCase3);
  const std::size_t at = text.find(from);
  BOOST_REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return dir.write(name, text);
}

// `r` failed with exit 2 and exactly the one line "meshrun: <line>", nothing on stdout.
void expect_refused(const Result& r, const std::string& line) {
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err == "meshrun: " + line + "\n");
  BOOST_TEST(r.out == "");
}

BOOST_AUTO_TEST_CASE(a_rank_3_program_runs_on_json_and_npy_inputs) {
  const Result json = run({"run", kProg3, kCase3});
  BOOST_TEST(json.code == 0, json.err);
  BOOST_TEST(json.out == kOut3);
  BOOST_TEST(json.err == "");
  const Result npy = run({"run", kProg3, kNpyCase3});
  BOOST_TEST(npy.code == 0, npy.err);
  BOOST_TEST(npy.out == kOut3);
}

// Equations around the shard_map (the whole run on the global arrays): the block each device
// cuts and the result assembled from the blocks along dimensions 0 and 2 of a rank-4 array.
BOOST_AUTO_TEST_CASE(a_rank_4_program_on_a_2d_mesh_runs) {
  const Result r = run({"run", kProg4, kCase4});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out == kOut4);
}

BOOST_AUTO_TEST_CASE(results_of_rank_3_go_to_output_and_npy_files) {
  TempDir dir;
  const std::string out = dir.path + "/out.json", npy = dir.path + "/npy";
  const Result r = run({"run", kProg3, kCase3, "-o", out, "--save-npy", npy});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out == "");
  BOOST_TEST(slurp(out) == kOut3);
  const std::string y = slurp(npy + "/y.npy");
  // np.save's header for f32[2,4,3] (padded to 128 bytes), then 2 * 1..24 in C order.
  BOOST_REQUIRE(y.size() == 128u + 24 * 4);
  BOOST_TEST(
      has(y.substr(0, 128), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4, 3), }"));
  for (int i = 0; i < 24; ++i) {
    float v = 0;
    std::memcpy(&v, y.data() + 128 + 4 * i, 4);
    BOOST_TEST(v == 2.0f * static_cast<float>(i + 1), "y.npy element " << i);
  }
  BOOST_TEST(has(slurp(npy + "/s.npy"), "'shape': (2, 3), }"));
  // Read back as an input: the .npy written is one meshrun reads.
  fs::copy_file(npy + "/y.npy", dir.path + "/rank3-x.npy");
  const std::string c = dir.write(
      "c.json", R"({"problem":"rank3-double","name":"t","input":{"x":{"npy":"rank3-x.npy"}}})");
  const Result again = run({"run", kProg3, c});
  BOOST_TEST(again.code == 0, again.err);
  BOOST_TEST(has(again.out, R"({"y":[[[4.0,8.0,12.0],)"));
}

BOOST_AUTO_TEST_CASE(check_grades_rank_3_results_element_by_element) {
  const Result ok = run({"check", "--program", kProg3, kCase3, kNpyCase3});
  BOOST_TEST(ok.code == 0, ok.out << ok.err);
  BOOST_TEST(ok.out == "PASS " + kCase3 + ": numbers ok; structure ok (0 rules)\nPASS " +
                           kNpyCase3 +
                           ": numbers ok; structure ok (0 rules)\n2 passed, 0 failed\n");
  const Result four = run({"check", "--program", kProg4, kCase4});
  BOOST_TEST(four.code == 0, four.out << four.err);
  TempDir dir;
  const std::string bad = case3_with(dir, "bad.json", "[38.0, 40.0, 42.0]", "[38.0, 0.0, 42.0]");
  const Result r = run({"check", "--program", kProg3, bad});
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.out == "FAIL " + bad +
                          ": numbers: 1 element differs (first: y[1][2][1]: got 40.0, expected "
                          "0.0, allowed 1e-05); structure ok (0 rules)\n0 passed, 1 failed\n");
}

BOOST_AUTO_TEST_CASE(check_update_blesses_rank_3_results) {
  TempDir dir;
  const std::string changed =
      case3_with(dir, "changed.json", "[38.0, 40.0, 42.0]", "[38.0, 0.0, 42.0]");
  std::string fresh_text = slurp(kSource + "/" + kCase3);
  fresh_text.resize(fresh_text.find(", \"expected\""));
  fresh_text += "}\n";
  const std::string fresh = dir.write("fresh.json", fresh_text);
  const Result r = run({"check", "--update", "--program", kProg3, changed, fresh});
  BOOST_TEST(r.code == 0, r.out << r.err);
  BOOST_TEST(r.out == "UPDATED " + changed +
                          ": 1 of 30 elements changed (1 beyond tolerance), largest change 40.0 "
                          "at y[1][2][1] (0.0 -> 40.0)\nUPDATED " +
                          fresh +
                          ": expected written (30 elements, none before)\n2 updated, 0 "
                          "unchanged, 0 refused\n");
  const std::string blessed =
      R"("expected":{"y":[[[2.0,4.0,6.0],[8.0,10.0,12.0],[14.0,16.0,18.0],[20.0,22.0,24.0]],)"
      R"([[26.0,28.0,30.0],[32.0,34.0,36.0],[38.0,40.0,42.0],[44.0,46.0,48.0]]],)"
      R"("s":[[22.0,26.0,30.0],[70.0,74.0,78.0]]}})";
  BOOST_TEST(slurp(fresh) == fresh_text.substr(0, fresh_text.size() - 2) + "," + blessed + "\n");
  const Result exact = run({"check", "--atol", "0", "--rtol", "0", "--program", kProg3, dir.path});
  BOOST_TEST(exact.code == 0, exact.out << exact.err);
  BOOST_TEST(has(exact.out, "2 passed, 0 failed"));
  const Result unchanged = run({"check", "--update", "--program", kProg3, changed});
  BOOST_TEST(unchanged.out ==
             "UNCHANGED " + changed +
                 ": numbers within tolerance\n0 updated, 1 unchanged, 0 refused\n");
}

// The trace names a rank-3 block by its dimensions' ranges; the sharding boxes of an array of
// rank 3 or more are the grid of the dimensions its spec splits.
BOOST_AUTO_TEST_CASE(trace_and_sharding_show_blocks_of_rank_3_and_4) {
  const Result r = run({"run", kProg3, kCase3, "--trace", "--show-sharding"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out == kOut3);
  const std::string trace =
      "trace of rank3-double\n"
      "mesh: Mesh('data': 2)\n"
      "inputs:\n"
      "  x: f32[2,4,3] P(None, 'data')\n"
      "    device 0: f32[2,2,3]{V:data}  dimension 1 [0:2)\n"
      "    device 1: f32[2,2,3]{V:data}  dimension 1 [2:4)\n"
      "collectives:\n"
      "  device 0: #1 psum[axis_name='data'] f32[6]{V:data} -> f32[6]  24 bytes\n"
      "  device 1: #1 psum[axis_name='data'] f32[6]{V:data} -> f32[6]  24 bytes\n"
      "outputs:\n"
      "  y: f32[2,4,3] P(None, 'data')\n"
      "    device 0: f32[2,2,3]{V:data}  dimension 1 [0:2)\n"
      "    device 1: f32[2,2,3]{V:data}  dimension 1 [2:4)\n"
      "  s: f32[2,3] P()\n"
      "    devices 0-1: f32[2,3]  whole array\n"
      "structure:\n"
      "sharding of rank3-double on Mesh('data': 2)\n"
      "inputs:\n"
      "x: f32[2,4,3] P(None, 'data')\n"
      "┌───────┬───────┐\n"
      "│ dev 0 │ dev 1 │\n"
      "└───────┴───────┘\n"
      "  [0:2)   [2:4)  dimension 1\n"
      "outputs:\n"
      "y: f32[2,4,3] P(None, 'data')\n"
      "┌───────┬───────┐\n"
      "│ dev 0 │ dev 1 │\n"
      "└───────┴───────┘\n"
      "  [0:2)   [2:4)  dimension 1\n"
      "s: f32[2,3] P()\n"
      "┌───────────┐\n"
      "│  dev 0,1  │\n"
      "└───────────┘\n";
  BOOST_TEST(r.err == trace);

  const Result four = run({"run", kProg4, kCase4, "--trace", "--show-sharding"});
  BOOST_TEST(four.code == 0, four.err);
  const std::vector<std::string> lines = lines_of(four.err);
  for (const std::string& line :
       {"  x: f32[2,2,2,2] P('data', None, 'model')",
        "    device 2: f32[1,2,1,2]{V:(data,model)}  dimension 0 [1:2), dimension 2 [0:1)",
        "│ dev 0 │ dev 1 │ dimension 0 [0:1)", "│ dev 2 │ dev 3 │ dimension 0 [1:2)",
        "  [0:1)   [1:2)  dimension 2"}) {
    BOOST_TEST((std::find(lines.begin(), lines.end(), line) != lines.end()), line);
  }
}

BOOST_AUTO_TEST_CASE(arrays_of_another_rank_or_ragged_are_refused_in_one_line) {
  TempDir dir;
  std::string deep = "1.0";
  for (int i = 0; i < 40; ++i) deep = "[" + deep + "]";
  const std::string c40 = dir.write("r40.json", R"({"x":)" + deep + "}");
  expect_refused(run({"run", kProg3, c40}),
                 c40 + ": input.x: must be a 3-D array (A, N, C), got a 40-D array");
  // A .npy of 40 dimensions: np.save's header for (1, 1, ..., 1), padded to 64 bytes.
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 40; ++i) dict += "1, ";
  dict += "), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string npy = "\x93NUMPY\x01";
  npy += '\0';
  npy += static_cast<char>(dict.size() & 0xff);
  npy += static_cast<char>(dict.size() >> 8);
  npy += dict + std::string("\0\0\x80\x3f", 4);
  dir.write("r40.npy", npy);
  const std::string n40 = dir.write("r40npy.json", R"({"x":{"npy":"r40.npy"}})");
  expect_refused(run({"run", kProg3, n40}),
                 n40 + ": input.x: must be a 3-D array (A, N, C), got a 40-D array");
  const std::string ragged = case3_with(dir, "ragged.json", "[22.0, 23.0, 24.0]", "[22.0, 23.0]");
  expect_refused(
      run({"run", kProg3, ragged}),
      ragged + ": input.x[1][3]: has 2 entries along dimension 2 but input.x[0][0] has 3");
  const std::string short_matrix = case3_with(dir, "short.json", ", [22.0, 23.0, 24.0]]]", "]]");
  expect_refused(
      run({"run", kProg3, short_matrix}),
      short_matrix + ": input.x[1]: has 3 entries along dimension 1 but input.x[0] has 4");
  const std::string expected_ragged =
      case3_with(dir, "expected.json", "[70.0, 74.0, 78.0]", "[70.0, [74.0], 78.0]");
  const Result e = run({"check", "--program", kProg3, expected_ragged});
  BOOST_TEST(e.code == 1);
  BOOST_TEST(has(
      e.out, "ERROR " + expected_ragged + ": expected.s[1][1]: must be a number, got an array"));
  // A program file's input of 40 dimensions: its reader's limit, 8.
  std::string prog = slurp(kSource + "/" + kProg3);
  const std::string shape = R"("shape": ["A", "N", "C"])";
  std::string forty = R"("shape": [)";
  for (int i = 0; i < 40; ++i) forty += std::string(i ? ", " : "") + "\"A\"";
  prog.replace(prog.find(shape), shape.size(), forty + "]");
  const std::string p40 = dir.write("p40.json", prog);
  expect_refused(run({"run", p40, kCase3}), p40 + ": inputs[0].shape: more than 8 dimensions");
}

}  // namespace
