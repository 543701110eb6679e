// The meshrun binary end to end: every case under cases/ through its program, every invalid case
// with its exit code and exact stderr line, `check`, exit codes, stdin, flags.
#include <boost/test/unit_test.hpp>

#include "programs/program.hpp"
#include "support/cases.hpp"
#include "support/run_meshrun.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

using meshrun::testing::expect_close;
using meshrun::testing::expect_output_matches_case;
using meshrun::testing::json_files;
using meshrun::testing::kDocumented;
using meshrun::testing::kSource;

using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;

using meshrun::testing::lines_of;

// One error: exactly one line, prefixed "meshrun: ".
void expect_one_error_line(const Result& r) {
  BOOST_TEST(r.out.empty());
  BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  BOOST_TEST(r.err.rfind("meshrun: ", 0) == 0u);
}

std::string program_of(const std::string& case_file) {
  return case_file.find("/dp-step/") != std::string::npos ? "dp-step" : "tp-mlp";
}

// cases/<name> of every program of the registry, in its order; each must hold a case.
std::vector<std::string> program_case_dirs() {
  std::vector<std::string> dirs;
  for (const meshrun::ProgramDef* p : meshrun::all_programs()) {
    const std::string dir = "cases/" + p->name;
    BOOST_TEST_REQUIRE(fs::is_directory(kSource + "/" + dir), dir << " is missing");
    BOOST_TEST_REQUIRE(!json_files(dir).empty(), dir << " holds no case");
    dirs.push_back(dir);
  }
  return dirs;
}

std::string example1_with_loss(const std::string& loss) {
  std::string text = slurp(kSource + "/cases/dp-step/example1.json");
  const std::string from = "\"loss\":121.0";
  text.replace(text.find(from), from.size(), "\"loss\":" + loss);
  return text;
}

}  // namespace

BOOST_AUTO_TEST_CASE(documented_examples_print_byte_identical) {
  for (const auto& [file, output] : kDocumented) {
    const Result r = run({program_of(file), file});
    BOOST_TEST(r.code == 0, file);
    BOOST_TEST(r.err == "", file);
    BOOST_TEST(r.out == std::string(output) + "\n", file << " printed " << r.out);
  }
}

BOOST_AUTO_TEST_CASE(every_case_passes_its_program) {
  std::size_t count = 0;
  for (const std::string& dir : program_case_dirs()) {
    const std::string program = dir.substr(dir.find('/') + 1);
    for (const std::string& file : json_files(dir)) {
      const Result r = run({program, file});
      BOOST_TEST(r.code == 0, file << ": " << r.err);
      BOOST_TEST(r.err == "", file);
      expect_output_matches_case(r, file);
      ++count;
    }
  }
  BOOST_TEST(count >= 12u);
}

BOOST_AUTO_TEST_CASE(examples_on_1_2_4_8_devices) {
  for (const char* devices : {"1", "2", "4", "8"}) {
    for (const auto& [file, output] : kDocumented) {
      const Result r = run({program_of(file), "--devices", devices, file});
      BOOST_TEST(r.code == 0, file << " on " << devices << ": " << r.err);
      expect_output_matches_case(r, file);
    }
  }
}

// cases/invalid/NAME.json with NAME.expect: line 1 the arguments ({} = the case path), line 2 the
// exit code, line 3 the exact stderr line. Nothing may reach stdout.
BOOST_AUTO_TEST_CASE(every_invalid_case_is_rejected_exactly) {
  const std::vector<std::string> files = json_files("cases/invalid");
  BOOST_TEST(files.size() >= 40u);
  for (const std::string& file : files) {
    const std::string expect_path = kSource + "/" + file.substr(0, file.size() - 5) + ".expect";
    BOOST_REQUIRE_MESSAGE(fs::exists(expect_path), file << " has no .expect");
    const std::vector<std::string> expect = lines_of(slurp(expect_path));
    BOOST_REQUIRE_MESSAGE(expect.size() == 3, expect_path << " must have 3 lines");
    std::vector<std::string> args;
    std::istringstream words(expect[0]);
    for (std::string w; words >> w;) args.push_back(w == "{}" ? file : w);
    const Result r = run(args);
    BOOST_TEST(r.code == std::stoi(expect[1]), file);
    BOOST_TEST(r.err == expect[2] + "\n", file);
    BOOST_TEST(r.out == "", file);
  }
}

BOOST_AUTO_TEST_CASE(check_passes_all_cases) {
  std::vector<std::string> args = {"check"};
  std::size_t n = 0;
  for (const std::string& dir : program_case_dirs()) {
    args.push_back(dir);
    n += json_files(dir).size();
  }
  const Result r = run(args);
  BOOST_TEST(r.code == 0, r.out << r.err);
  BOOST_TEST(r.err == "");
  const std::vector<std::string> lines = lines_of(r.out);
  BOOST_REQUIRE(lines.size() == n + 1);
  BOOST_TEST(lines.back() == std::to_string(n) + " passed, 0 failed");
  BOOST_TEST(lines.front() ==
             "PASS cases/dp-step/example1.json: numbers ok; structure ok (3 rules)");
  for (std::size_t i = 0; i < n; ++i) BOOST_TEST(lines[i].rfind("PASS ", 0) == 0u, lines[i]);
}

BOOST_AUTO_TEST_CASE(check_reports_fail_and_error) {
  TempDir dir;
  const std::string wrong = dir.write("a-wrong.json", example1_with_loss("120.0"));
  const std::string no_expected = dir.write(
      "b-no-expected.json",
      R"({"problem":"dp-step","name":"n","input":{"w":[[0.0]],"b":[0.0],"x":[[1],[2],[3],[4],[5],[6],[7],[8]],)"
      R"("y":[[1],[2],[3],[4],[5],[6],[7],[8]],"lr":0.1}})");
  const std::string bad = dir.write("c-bad.json", "{");
  dir.write("d-ignored.txt", "not a case");
  const std::string good = dir.write("e-good.json", slurp(kSource + "/cases/tp-mlp/example2.json"));
  const Result r = run({"check", dir.path});
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.err == "");
  const std::vector<std::string> lines = lines_of(r.out);
  BOOST_REQUIRE(lines.size() == 5u);
  BOOST_TEST(lines[0] ==
             "FAIL " + wrong +
                 ": numbers: 1 element differs (first: loss: got 121.0, expected 120.0, "
                 "allowed 0.00121); structure ok (3 rules)");
  BOOST_TEST(lines[1] == "ERROR " + no_expected + ": no \"expected\" to grade against");
  BOOST_TEST(lines[2] ==
             "ERROR " + bad +
                 ": invalid JSON at line 1, column 2 (byte 2): syntax error while parsing "
                 "object key - unexpected end of input; expected string literal");
  BOOST_TEST(lines[3] == "PASS " + good + ": numbers ok; structure ok (5 rules)");
  BOOST_TEST(lines[4] == "1 passed, 3 failed");
}

BOOST_AUTO_TEST_CASE(check_missing_path_is_a_usage_error) {
  const Result r = run({"check", "cases/dp-step", "cases/no-such-dir"});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err == "meshrun: cases/no-such-dir: no such file or directory\n");
  BOOST_TEST(r.out == "");
}

BOOST_AUTO_TEST_CASE(mismatch_prints_result_and_lists_elements) {
  TempDir dir;
  const std::string file = dir.write("wrong.json", example1_with_loss("120.0"));
  const Result r = run({"dp-step", file});
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.out == std::string(kDocumented[0].second) + "\n");
  BOOST_TEST(r.err ==
             "meshrun: loss: got 121.0, expected 120.0, allowed 0.00121\n"
             "meshrun: 1 of 3 output elements differ from expected\n");
  // A looser tolerance accepts it.
  BOOST_TEST(run({"dp-step", "--atol", "1.5", file}).code == 0);
}

// `meshrun PROGRAM CASE` skips CLI11 (app/main.cpp, plain_case_word); with `--precision 6` (the
// default) before CASE the same run goes through CLI11, which classifies CASE as it always did
// (not after `--`, where every word is positional). Both must print the same bytes with the same
// exit code, whatever the outcome: a result, a graded mismatch, an invalid case, a missing file, a
// directory, and words CLI11 could read as something else (`++` ends a subcommand).
BOOST_AUTO_TEST_CASE(plain_run_matches_the_cli11_path) {
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> runs;  // program, case
  for (const auto& [file, output] : kDocumented) runs.emplace_back(program_of(file), file);
  runs.emplace_back("mlp-train", "cases/mlp-train/example1.json");
  runs.emplace_back("dp-step", dir.write("wrong.json", example1_with_loss("120.0")));
  runs.emplace_back("dp-step", "cases/no-such-case.json");
  runs.emplace_back("dp-step", "cases");
  for (const char* word : {"dp-step", "tp-mlp", "check", "bench", "++", "+", "a=b", "/h", "@x"}) {
    runs.emplace_back("dp-step", word);  // each a CASE (or, `++`, no CASE) on both paths
  }
  for (const std::string& file : json_files("cases/invalid")) {
    const std::string expect = slurp(kSource + "/" + file.substr(0, file.size() - 5) + ".expect");
    const std::string args = expect.substr(0, expect.find('\n'));
    if (args.ends_with(" {}") && args.find(' ') == args.size() - 3) {  // `PROGRAM {}`: no flag
      runs.emplace_back(args.substr(0, args.size() - 3), file);
    }
  }
  BOOST_TEST(runs.size() >= 40u);
  std::set<int> codes;
  for (const auto& [program, file] : runs) {
    const Result plain = run({program, file});
    const Result parsed = run({program, "--precision", "6", file});
    BOOST_TEST(plain.code == parsed.code, program << " " << file);
    BOOST_TEST(plain.out == parsed.out, program << " " << file);
    BOOST_TEST(plain.err == parsed.err, program << " " << file);
    codes.insert(plain.code);
  }
  BOOST_TEST((codes == std::set<int>{0, 1, 2}));  // every kind of outcome was compared
}

BOOST_AUTO_TEST_CASE(stdin_input) {
  const Result r = run({"dp-step", "-"}, kSource + "/cases/dp-step/example1.json");
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out == std::string(kDocumented[0].second) + "\n");
  const Result bad = run({"tp-mlp", "-"});  // /dev/null: empty
  BOOST_TEST(bad.code == 2);
  BOOST_TEST(bad.err == "meshrun: <stdin>: the file is empty\n");
}

BOOST_AUTO_TEST_CASE(unreadable_files) {
  Result r = run({"dp-step", "cases/no-such-case.json"});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err == "meshrun: cases/no-such-case.json: cannot read: No such file or directory\n");
  expect_one_error_line(r);
  r = run({"dp-step", "cases"});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err == "meshrun: cases: cannot read: Is a directory\n");
}

BOOST_AUTO_TEST_CASE(usage_errors_exit_2) {
  const std::string ex = "cases/dp-step/example1.json";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"frob"},
           {"frob", ex},
           {"dp-step"},
           {"dp-step", "--frob", ex},
           {"dp-step", ex, "extra"},
           {"dp-step", "--devices", "0", ex},
           {"dp-step", "--devices", "x", ex},
           {"dp-step", "--timeout", "0", ex},
           {"dp-step", "--precision", "-1", ex},
           {"dp-step", "--inject", "bogus", ex},
           {"check"},
           // An empty word names nothing: refused, never
           // read as the flag not given.
           {"dp-step", ""},
           {"dp-step", "--mesh", "", ex},
           {"run", "", ex},
           {"run", "cases/programs/dp-step.json", ""},
           {"run", "cases/programs/dp-step.json", "--exercise", "", ex},
           {"check", ""},
           {"check", "--program", "", ex},
           {"check", "--program", "cases/programs/dp-step.json", "--exercise", "", ex}}) {
    const Result r = run(args);
    BOOST_TEST(r.code == 2, (args.empty() ? "(none)" : args[0]) << " " << r.err);
    expect_one_error_line(r);
  }
  BOOST_TEST(run({"frob"}).err == "meshrun: unknown subcommand 'frob' (see meshrun --help)\n");
  BOOST_TEST(run({"dp-step", ""}).err == "meshrun: CASE: must name a case file (or - for stdin)\n");
  BOOST_TEST(run({"check", "--program", "", ex}).err ==
             "meshrun: --program: must name a program file\n");
  BOOST_TEST(run({"dp-step", "--mesh", "", ex}).err ==
             "meshrun: --mesh: must name the mesh's axes and sizes, e.g. data=2,model=4\n");
}

BOOST_AUTO_TEST_CASE(help_exits_0) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--help"}, {"dp-step", "--help"}, {"check", "-h"}}) {
    const Result r = run(args);
    BOOST_TEST(r.code == 0);
    BOOST_TEST(r.err == "");
    BOOST_TEST(r.out.find("Usage") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(precision_and_exact_flags) {
  Result r = run({"dp-step", "--precision", "2", "cases/dp-step/example2.json"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(r.out == R"({"w":[[0.07],[0.24]],"b":[-0.06],"loss":0.3})"
                      "\n");
  r = run({"dp-step", "--exact", "cases/dp-step/example1.json"});
  BOOST_TEST(r.code == 0);
  expect_output_matches_case(r, "cases/dp-step/example1.json");
}

// docs/cases.md: a one-axis program also runs on a 2-D mesh, split over its own axis and
// replicated over the other, and prints what a 1-D mesh of that axis prints -- graded by the same
// rules, which are about its axis: a right program passes them (they once expected the split over
// all 8 devices and failed every case, exit 1).
BOOST_AUTO_TEST_CASE(one_axis_programs_on_a_2d_mesh_pass_their_own_rules) {
  const std::vector<std::vector<std::string>> runs = {
      {"dp-step", "data=4,model=2", "4"},
      {"dp-step", "model=2,data=4", "4"},
      {"tp-mlp", "data=2,model=4", "4"},
      {"tp-mlp", "data=4,model=2", "2"},
  };
  for (const auto& run_of : runs) {
    const std::string& prog = run_of[0];
    for (const std::string c : {"example1.json", "example2.json"}) {
      const std::string file = "cases/" + prog + "/" + c;
      const Result two_d = run({prog, "--mesh", run_of[1], file});
      const Result one_d = run({prog, "--devices", run_of[2], file});
      BOOST_TEST(two_d.code == 0, prog << " --mesh " << run_of[1] << " " << c << ": " << two_d.err);
      BOOST_TEST(two_d.err == "");
      BOOST_TEST(one_d.code == 0, one_d.err);
      BOOST_TEST(two_d.out == one_d.out, prog << " --mesh " << run_of[1] << " " << c);
    }
  }
  const Result r = run({"check", "--mesh", "data=4,model=2", "cases/dp-step", "cases/tp-mlp"});
  BOOST_TEST(r.code == 0, r.out);
  BOOST_TEST(r.out.ends_with(" passed, 0 failed\n"), r.out);
}

BOOST_AUTO_TEST_CASE(mesh_failure_exits_3) {
  const Result r = run({"dp-step", "--inject", "fail:2@1", "cases/dp-step/example1.json"});
  BOOST_TEST(r.code == 3, r.err);
  expect_one_error_line(r);
  BOOST_TEST(r.err.find("device 2") != std::string::npos, r.err);
}

// --trace prints the program as it ran (to stderr, or --trace=FILE) and never takes the CASE as
// its file; --show-sharding draws the blocks. Neither touches stdout.
BOOST_AUTO_TEST_CASE(trace_and_sharding_views) {
  const std::string documented =
      R"({"out":[[2.39]],"hidden":[[0.55,0.0,0.35,0.6,1.15,0.7,0.0,0.0]]})"
      "\n";
  const Result r = run({"tp-mlp", "--trace", "cases/tp-mlp/example1.json"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out == documented);
  BOOST_TEST(r.err.find("mesh: Mesh('model': 8)") != std::string::npos, r.err);
  BOOST_TEST(r.err.find("w1: f32[2,8] P(None, 'model')") != std::string::npos);
  BOOST_TEST(r.err.find("device 5: f32[2,1]{V:model}  columns [5:6)") != std::string::npos);
  BOOST_TEST(
      r.err.find("device 7: #1 psum[axis_name='model'] f32[1,1]{V:model} -> f32[1,1]  4 bytes") !=
      std::string::npos);
  BOOST_TEST(r.err.find("FAILED") == std::string::npos);

  TempDir dir;
  const std::string file = dir.path + "/trace.txt";
  const Result f =
      run({"dp-step", "cases/dp-step/example2.json", "--trace=" + file, "--devices", "4"});
  BOOST_TEST(f.code == 0, f.err);
  BOOST_TEST(f.err == "");
  const std::string text = slurp(file);
  BOOST_TEST(text.find("x: f32[16,2] P('data',)") != std::string::npos, text);
  BOOST_TEST(text.find("device 3: f32[4,2]{V:data}  rows [12:16)") != std::string::npos, text);
  BOOST_TEST(text.find("device 0: #1 pmean[axis_name='data'] f32[4]{V:data} -> f32[4]  16 bytes") !=
                 std::string::npos,
             text);

  const Result s = run({"dp-step", "cases/dp-step/example1.json", "--show-sharding"});
  BOOST_TEST(s.code == 0);
  BOOST_TEST(s.err.find("│  dev 0,1,2,3,4,5,6,7  │") != std::string::npos, s.err);
  BOOST_TEST(s.err.find("│   dev 7    │ rows [7:8)") != std::string::npos, s.err);
}
