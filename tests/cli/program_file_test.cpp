// `meshrun run PROG.json CASE` and `meshrun check --program`: the exported built-in programs
// (cases/programs/) on every case and mesh, against the cases' expected values, the documented
// outputs byte for byte and the hand-written programs; every hostile program file
// (cases/invalid-programs/) refused with its exact line; the gallery of submissions
// (cases/submissions/) graded as its .expect files say.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cases.hpp"
#include "support/run_meshrun.hpp"
#include "support/json.hpp"

namespace {

// An .expect's first line as arguments, `{}` standing for the submission.
std::vector<std::string> expect_args(const std::string& line, const std::string& file) {
  std::vector<std::string> args;
  std::istringstream words(line);
  for (std::string w; words >> w;) args.push_back(w == "{}" ? file : w);
  return args;
}

using meshrun::testing::expect_output_matches_case;
using meshrun::testing::has;
using meshrun::testing::json_files;
using meshrun::testing::kDocumented;
using meshrun::testing::kSource;
using meshrun::testing::lines_of;
using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::slurp;

namespace fs = std::filesystem;

const char* const kPrograms[] = {"dp-step", "tp-mlp", "mlp-train"};

std::string program_file(const std::string& program) {
  return "cases/programs/" + program + ".json";
}

// The meshes a program file was exported for, as --mesh values ("data=8").
std::vector<std::string> exported_meshes(const std::string& program) {
  const nlohmann::json p =
      meshrun::testing::parse_json(slurp(kSource + "/" + program_file(program)));
  std::vector<std::string> meshes;
  for (const auto& e : p.at("exports")) {
    std::string m;
    for (const auto& axis : e.at("mesh")) {
      m += (m.empty() ? "" : ",") + axis[0].get<std::string>() + "=" +
           std::to_string(axis[1].get<int>());
    }
    if (std::find(meshes.begin(), meshes.end(), m) == meshes.end()) meshes.push_back(m);
  }
  return meshes;
}

// Every number of `a` within 1e-5 (absolute and relative) of `b`'s.
void expect_within(const nlohmann::json& a, const nlohmann::json& b, const std::string& what) {
  if (b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    BOOST_TEST(std::fabs(x - y) <= 1e-5 + 1e-5 * std::fabs(y), what << ": " << x << " vs " << y);
    return;
  }
  BOOST_REQUIRE_MESSAGE(a.is_array() == b.is_array() && a.size() == b.size(), what << ": shapes");
  if (a.is_object()) {
    for (const auto& item : b.items())
      expect_within(a.at(item.key()), item.value(), what + "." + item.key());
    return;
  }
  for (std::size_t i = 0; i < a.size(); ++i)
    expect_within(a[i], b[i], what + "[" + std::to_string(i) + "]");
}

BOOST_AUTO_TEST_CASE(documented_outputs_byte_for_byte) {
  for (const auto& [file, output] : kDocumented) {
    const std::string program =
        std::string(file).find("/dp-step/") != std::string::npos ? "dp-step" : "tp-mlp";
    const Result r = run({"run", program_file(program), file});
    BOOST_TEST(r.code == 0, file << ": " << r.err);
    BOOST_TEST(r.out == std::string(output) + "\n", file);
    BOOST_TEST(r.err == "", file);
  }
}

// Every case of the three programs on every mesh its file was exported for: within tolerance of
// the case's expected, and of the hand-written program on the same mesh (both --exact).
BOOST_AUTO_TEST_CASE(every_case_on_every_exported_mesh) {
  std::size_t runs = 0;
  for (const char* program : kPrograms) {
    const std::vector<std::string> meshes = exported_meshes(program);
    BOOST_TEST(meshes.size() >= 4u, program);
    for (const std::string& file : json_files(std::string("cases/") + program)) {
      for (const std::string& mesh : meshes) {
        const Result r = run({"run", program_file(program), "--mesh", mesh, "--exact", file});
        const Result h = run({program, "--mesh", mesh, "--exact", file});
        // A case whose rows a mesh does not divide is refused alike by both.
        BOOST_TEST(r.code == h.code, file << " on " << mesh << ": " << r.err << " / " << h.err);
        if (h.code != 0) continue;
        expect_output_matches_case(r, file);
        expect_within(meshrun::testing::parse_json(r.out), meshrun::testing::parse_json(h.out),
                      file + " on " + mesh);
        ++runs;
      }
    }
  }
  BOOST_TEST(runs >= 100u);
}

BOOST_AUTO_TEST_CASE(check_program_passes_every_case) {
  for (const char* program : kPrograms) {
    const std::string dir = std::string("cases/") + program;
    const Result r = run({"check", "--program", program_file(program), dir});
    BOOST_TEST(r.code == 0, program << ": " << r.out << r.err);
    const std::vector<std::string> lines = lines_of(r.out);
    BOOST_REQUIRE(!lines.empty());
    const std::size_t n = json_files(dir).size();
    BOOST_TEST(lines.back() == std::to_string(n) + " passed, 0 failed");
  }
}

// cases/invalid-programs/NAME.json with NAME.expect: line 1 the arguments ({} = the file), line 2
// the exit code, line 3 the exact stderr line. Nothing may reach stdout.
BOOST_AUTO_TEST_CASE(every_invalid_program_is_rejected_exactly) {
  const std::vector<std::string> files = json_files("cases/invalid-programs");
  BOOST_TEST(files.size() >= 15u);
  for (const std::string& file : files) {
    const std::string expect_path = kSource + "/" + file.substr(0, file.size() - 5) + ".expect";
    BOOST_REQUIRE_MESSAGE(std::filesystem::exists(expect_path), file << " has no .expect");
    const std::vector<std::string> expect = lines_of(slurp(expect_path));
    BOOST_REQUIRE_MESSAGE(expect.size() == 3, expect_path << " must have 3 lines");
    const Result r = run(expect_args(expect[0], file));
    BOOST_TEST(r.code == std::stoi(expect[1]), file << ": " << r.err);
    BOOST_TEST(r.err == expect[2] + "\n", file);
    BOOST_TEST(r.out == "", file);
    BOOST_TEST(r.seconds < 10, file);
  }
}

}  // namespace

namespace {

// The program the hostile files break runs, and grades its case: each hostile file fails for
// its one fault.
BOOST_AUTO_TEST_CASE(the_valid_base_of_the_hostile_programs_runs) {
  const std::string prog = "cases/invalid-programs/valid/double.json";
  const std::string c = "cases/invalid-programs/valid/double-case.json";
  const Result r = run({"run", prog, c});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out ==
             "{\"y\":[2.0,4.0,6.0,8.0,10.0,12.0,14.0,16.0,18.0,20.0,22.0,24.0,26.0,28.0,"
             "30.0,32.0]}\n");
  const Result four = run({"run", prog, "--devices", "4", c});
  BOOST_TEST(four.code == 2);
  BOOST_TEST(four.err == "meshrun: " + prog +
                             ": mesh: the program has no export for Mesh('data': 4) (it was "
                             "exported for Mesh('data': 8))\n");
}

}  // namespace

namespace {

// cases/submissions/<program>/NAME.json with NAME.expect: line 1 the arguments ({} = the file),
// line 2 the exit code, line 3 the first line of stdout -- the verdict, naming the rule or the
// numbers that show what is wrong. Exit 0 marks a right solution: graded over every case of its
// program, it passes them all and prints line 3 among them; every other one must fail (exit 1).
// Every file of the directory is graded, one test case per exercise (ctest runs them apart).
constexpr std::size_t kGalleryRight = 30;
constexpr std::size_t kGalleryWrong = 20;

// The folder of the example cases of `exercise`, from its exercise file ("cases", relative to it).
std::string cases_of(const std::string& exercise) {
  const std::string folder = "cases/exercises/" + exercise;
  const nlohmann::json ex =
      meshrun::testing::parse_json(slurp(kSource + "/" + folder + "/exercise.json"));
  return fs::path(folder + "/" + ex.at("cases").get<std::string>()).lexically_normal().string();
}

void the_gallery_of(const std::string& program, std::size_t min_right = kGalleryRight,
                    std::size_t min_wrong = kGalleryWrong) {
  const std::string dir = "cases/submissions/" + program;
  std::size_t right = 0, wrong = 0;
  for (const auto& e : fs::directory_iterator(kSource + "/" + dir)) {
    if (e.path().extension() == ".py") {  // every submission is exported and has its verdict
      BOOST_TEST(fs::exists(fs::path(e.path()).replace_extension(".json")), e.path());
      BOOST_TEST(fs::exists(fs::path(e.path()).replace_extension(".expect")), e.path());
    }
  }
  for (const std::string& file : json_files(dir)) {
    const std::vector<std::string> expect =
        lines_of(slurp(kSource + "/" + file.substr(0, file.size() - 5) + ".expect"));
    BOOST_REQUIRE_MESSAGE(expect.size() == 3, file << ".expect must have 3 lines");
    if (std::stoi(expect[1]) == 0) {
      // Every case of the exercise; under the sanitizers only the case its .expect names
      // (MESHRUN_GALLERY_ONE_CASE, set by tests/CMakeLists.txt).
      const Result all = std::getenv("MESHRUN_GALLERY_ONE_CASE") != nullptr
                             ? run(expect_args(expect[0], file))
                             : run({"check", "--program", file, cases_of(program)});
      BOOST_TEST(all.code == 0, file << ": " << all.out);
      const std::vector<std::string> out = lines_of(all.out);
      BOOST_TEST((std::find(out.begin(), out.end(), expect[2]) != out.end()),
                 file << ": " << all.out);
      ++right;
      continue;
    }
    const Result r = run(expect_args(expect[0], file));
    BOOST_TEST(r.code == std::stoi(expect[1]), file << ": " << r.err);
    const std::vector<std::string> out = lines_of(r.out);
    BOOST_TEST((!out.empty() && out.front() == expect[2]), file << ": " << r.out);
    BOOST_TEST(std::stoi(expect[1]) == 1, file << ": a wrong one fails (exit 1)");
    ++wrong;
  }
  // The gallery's size (issue #30): so many right and wrong solutions per exercise, so a
  // directory emptied or an .expect lost shows here.
  BOOST_TEST(right >= min_right, program << ": right solutions");
  BOOST_TEST(wrong >= min_wrong, program << ": wrong solutions");
}

// Every exercise shipped (cases/exercises/NAME/exercise.json) has its gallery, graded here: the
// one MESHRUN_GALLERY names (ctest runs one entry per exercise, tests/CMakeLists.txt, so that a
// new exercise is data and needs no line of C++), or all of them, in name order, when it is unset.
BOOST_AUTO_TEST_CASE(the_gallery_gets_its_verdicts) {
  std::vector<std::string> exercises;
  if (const char* one = std::getenv("MESHRUN_GALLERY"); one != nullptr && *one != '\0') {
    exercises.emplace_back(one);
  } else {
    for (const auto& e : fs::directory_iterator(kSource + "/cases/exercises"))
      if (fs::exists(e.path() / "exercise.json")) exercises.push_back(e.path().filename().string());
    std::sort(exercises.begin(), exercises.end());
    BOOST_TEST(exercises.size() >= 5u);  // dp-step, tp-mlp, mlp-train, ring-allreduce, matmul-2d
  }
  for (const std::string& exercise : exercises) {
    BOOST_TEST_CONTEXT(exercise) {
      BOOST_REQUIRE_MESSAGE(
          fs::is_directory(kSource + "/cases/submissions/" + exercise),
          "cases/exercises/" << exercise << " has no gallery in cases/submissions");
      the_gallery_of(exercise);
    }
  }
}

// The two right programs issue #30 reported FAILed stay in the gallery: b2 added once inside the
// psum by device 0, and a pmean over ('data', 'model').
BOOST_AUTO_TEST_CASE(the_programs_issue_30_reported_stay_in_the_gallery) {
  for (const char* right : {"tp-mlp/b2-once-device0", "mlp-train/pmean-data-model"}) {
    const std::vector<std::string> expect =
        lines_of(slurp(kSource + "/cases/submissions/" + right + ".expect"));
    BOOST_TEST((expect.size() == 3 && expect[1] == "0"), right);
  }
}

}  // namespace

namespace {

// A constant nested in 60 jits reads in the memory of one copy: the reader once copied every
// equation's params whole, nested jaxprs and their constants with them, once per level (a 5 MB
// file took 1 GB; 64 levels of a 1 GiB file would have taken 100 GB).
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
BOOST_AUTO_TEST_CASE(a_constant_nested_60_deep_is_read_once) {
  using meshrun::testing::run_with;
  using meshrun::testing::RunOptions;
  using meshrun::testing::TempDir;
  nlohmann::json prog =
      meshrun::testing::parse_json(slurp(kSource + "/cases/invalid-programs/valid/double.json"));
  nlohmann::json& sm = prog["exports"][0]["jaxpr"]["eqns"][0]["params"];
  const nlohmann::json type = {{"dtype", "f32"}, {"shape", {"M"}}};
  const std::size_t n = 1000000;
  nlohmann::json inner = sm["jaxpr"];
  inner["constvars"] = {{{"id", 5}, {"type", {{"dtype", "f32"}, {"shape", {n}}}}}};
  inner["consts"] = {{{"dtype", "f32"}, {"shape", {n}}, {"data", std::vector<float>(n, 1.5f)}}};
  for (int depth = 0; depth < 60; ++depth) {
    nlohmann::json eqn = {{"primitive", "jit"},
                          {"params", {{"name", "f"}, {"jaxpr", std::move(inner)}}},
                          {"in", {{{"var", 0}}}},
                          {"out", {{{"id", 1}, {"type", type}}}}};
    inner = {{"invars", {{{"id", 0}, {"type", type}}}},
             {"eqns", {std::move(eqn)}},
             {"outvars", {{{"var", 1}}}}};
  }
  sm["jaxpr"] = std::move(inner);
  TempDir dir;
  const std::string path = dir.path + "/nested.json";
  {
    std::ofstream f(path);
    f << prog.dump();
  }
  RunOptions o;
  o.address_space_limit = 400L << 20;  // measured: 1 GB before, 80 MB resident after
  const Result r = run_with({"run", path, "cases/invalid-programs/valid/double-case.json"}, o);
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out.starts_with("{\"y\":[2.0,4.0,"));
}
#endif

}  // namespace

namespace {

// The review's findings, each a program in tests/cli/programs/ (small hand-written files).
const std::string kProgs = "tests/cli/programs/";

// x handed to the shard_map twice with different specs (P() and P('data')): each operand is cut
// by its own spec -- y = x block + sum(x) -- not both by one.
BOOST_AUTO_TEST_CASE(an_input_handed_twice_with_two_specs_is_cut_by_each) {
  const Result r = run({"run", kProgs + "twice-specs.json", kProgs + "x8.json"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out == "{\"y\":[37.0,38.0,39.0,40.0,41.0,42.0,43.0,44.0]}\n");
}

// A jit given one variable twice (in: [x, x]) is no plain program, and no internal error.
BOOST_AUTO_TEST_CASE(a_jit_given_one_variable_twice_runs) {
  const Result r = run({"run", kProgs + "jit-twice.json", kProgs + "x8.json"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out == "{\"y\":[2.0,4.0,6.0,8.0,10.0,12.0,14.0,16.0]}\n");
}

// An integer beyond what meshrun holds exactly is the input's limit here (exit 2, the file and
// the equation named) -- outside the shard_map and on a device alike.
BOOST_AUTO_TEST_CASE(a_primitive_refusing_values_at_run_time_is_exit_2_naming_the_equation) {
  const Result out = run({"run", kProgs + "i32-outside.json", kProgs + "n-2-20.json"});
  BOOST_TEST(out.code == 2);
  BOOST_TEST(out.err == "meshrun: " + kProgs +
                            "i32-outside.json: exports[0].jaxpr.eqns[0] (mul): "
                            "mul: an integer result is beyond 2^24, which meshrun holds exactly\n");
  const Result in = run({"run", kProgs + "i32-inside.json", kProgs + "n-2-20.json"});
  BOOST_TEST(in.code == 2);
  BOOST_TEST(has(in.err, kProgs + "i32-inside.json: exports[0].jaxpr.eqns[0].params.jaxpr.eqns[0] "
                                  "(mul): mul: an integer result is beyond 2^24"),
             in.err);
  BOOST_TEST(lines_of(in.err).size() == 1u);
}

// Memory is bounded before the run: a value of 2^31 - 1 elements is refused, not allocated.
BOOST_AUTO_TEST_CASE(a_value_beyond_the_memory_bound_is_refused_before_the_run) {
  const Result r = run({"run", kProgs + "big-bcast.json", kProgs + "x8.json"});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err ==
             "meshrun: " + kProgs +
                 "big-bcast.json: exports[0].jaxpr.eqns[0] "
                 "(broadcast_in_dim): f32[2147483647] holds 2.14748e+09 elements, more than "
                 "2^28 (1 GiB), the most one value may hold\n");
  BOOST_TEST(r.seconds < 5);
}

// A correct dp-step with an equation before its shard_map (a copy of x): the trace names the
// operand and the results after the program's inputs and outputs, so the rules hold.
BOOST_AUTO_TEST_CASE(a_program_with_equations_around_its_shard_map_is_graded_by_name) {
  meshrun::testing::TempDir dir;
  nlohmann::json p = meshrun::testing::parse_json(slurp(kSource + "/cases/programs/dp-step.json"));
  for (auto& exp : p["exports"]) {
    nlohmann::json* jx = &exp["jaxpr"];
    while ((*jx)["eqns"][0]["primitive"] == "jit") jx = &(*jx)["eqns"][0]["params"]["jaxpr"];
    nlohmann::json& shard = (*jx)["eqns"][0];
    BOOST_REQUIRE(shard["primitive"] == "shard_map");
    int next = 0;
    for (const auto& v : (*jx)["invars"]) next = std::max(next, v["id"].get<int>() + 1);
    for (const auto& e : (*jx)["eqns"])
      for (const auto& o : e["out"]) next = std::max(next, o["id"].get<int>() + 1);
    const nlohmann::json x = (*jx)["invars"][2];
    shard["in"][2] = {{"var", next}};
    nlohmann::json copy = nlohmann::json::object();
    copy["primitive"] = "copy";
    copy["params"] = nlohmann::json::object();
    copy["in"] = nlohmann::json::array({nlohmann::json::object({{"var", x["id"]}})});
    copy["out"] =
        nlohmann::json::array({nlohmann::json::object({{"id", next}, {"type", x["type"]}})});
    (*jx)["eqns"].insert((*jx)["eqns"].begin(), copy);
  }
  const std::string prog = dir.write("dp-copy.json", p.dump());
  const Result r = run({"check", "--program", prog, "cases/dp-step"});
  BOOST_TEST(r.code == 0, r.out << r.err);
  const std::vector<std::string> lines = lines_of(r.out);
  BOOST_TEST((!lines.empty() && lines.back() == "10 passed, 0 failed"), r.out);
}

// A right program on a large case is not failed by chance: a computed number has one graded
// element's fraction bits about once in 2^23 / N (N = 65536 elements of w here), so the rule on
// another device's elements needs both draws to see the element at the same place of the same
// value. With the two draws compared as sets, matmul-2d's plain right program held "2 elements
// of w from outside its block" on this case (review of 2026-12-06). The expected out is zeros:
// only the structure is read.
BOOST_AUTO_TEST_CASE(a_right_program_on_a_large_case_holds_nothing_by_chance) {
  meshrun::testing::TempDir dir;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> cents(-200, 200);
  const auto matrix = [&](int rows, int cols) {
    nlohmann::json m = nlohmann::json::array();
    for (int i = 0; i < rows; ++i) {
      nlohmann::json row = nlohmann::json::array();
      for (int j = 0; j < cols; ++j) row.push_back(cents(rng) / 100.0);
      m.push_back(row);
    }
    return m;
  };
  nlohmann::json c;
  c["problem"] = "matmul-2d";
  c["input"] = {{"x", matrix(512, 128)}, {"w", matrix(128, 512)}};
  c["expected"] = {{"out", nlohmann::json::array()}};
  for (int i = 0; i < 512; ++i) c["expected"]["out"].push_back(std::vector<double>(512, 0.0));
  const std::string path = dir.write("big.json", c.dump());
  const Result r = run({"check", "--program", "cases/submissions/matmul-2d/right.json", path});
  const std::vector<std::string> lines = lines_of(r.out);
  BOOST_REQUIRE(!lines.empty());
  BOOST_TEST(lines.front().find("structure ok (13 rules)") != std::string::npos, r.out);
}

// A program graded as an exercise has the exercise's dtypes. Graded by value within a tolerance,
// an i32 loss (rounded) or an i32 x (a case's integers) could pass for the f32 ones; each is
// refused at load, naming the file and the field (exit 2), before any case runs. dp-step's
// export with one equation added at its top level: loss converted to i32 after the shard_map,
// or x taken as i32 and converted to f32 before it.
BOOST_AUTO_TEST_CASE(a_program_with_other_dtypes_than_its_exercise_is_refused_naming_the_field) {
  meshrun::testing::TempDir dir;
  const nlohmann::json base =
      meshrun::testing::parse_json(slurp(kSource + "/cases/programs/dp-step.json"));
  const auto fresh_id = [](const nlohmann::json& jx) {
    int next = 0;
    for (const auto& v : jx["invars"]) next = std::max(next, v["id"].get<int>() + 1);
    for (const auto& e : jx["eqns"])
      for (const auto& o : e["out"]) next = std::max(next, o["id"].get<int>() + 1);
    return next;
  };
  const auto convert = [](int from, int to, const char* dtype, const nlohmann::json& shape) {
    nlohmann::json eqn = nlohmann::json::object();
    eqn["primitive"] = "convert_element_type";
    eqn["params"] = nlohmann::json::object({{"new_dtype", dtype}});
    eqn["in"] = nlohmann::json::array({nlohmann::json::object({{"var", from}})});
    eqn["out"] = nlohmann::json::array({nlohmann::json::object(
        {{"id", to}, {"type", nlohmann::json::object({{"dtype", dtype}, {"shape", shape}})}})});
    return eqn;
  };

  nlohmann::json loss = base;
  for (auto& exp : loss["exports"]) {
    nlohmann::json& jx = exp["jaxpr"];
    const int id = fresh_id(jx);
    jx["eqns"].push_back(
        convert(jx["outvars"][2]["var"].get<int>(), id, "i32", nlohmann::json::array()));
    jx["outvars"][2] = nlohmann::json::object({{"var", id}});
  }
  const std::string lossy = dir.write("loss-i32.json", loss.dump());
  const Result l = run({"check", "--program", lossy, "cases/dp-step/example1.json"});
  BOOST_TEST(l.code == 2, l.out << l.err);
  BOOST_TEST(l.out.empty(), l.out);
  BOOST_TEST(l.err == "meshrun: " + lossy + ": exports[0].jaxpr.outvars[2]: output loss is i32, " +
                          "but dp-step returns it as f32\n",
             l.err);

  nlohmann::json x = base;
  x["inputs"][2]["dtype"] = "i32";
  for (auto& exp : x["exports"]) {
    nlohmann::json& jx = exp["jaxpr"];
    const int id = fresh_id(jx);
    nlohmann::json& in = jx["invars"][2];
    in["type"]["dtype"] = "i32";
    jx["eqns"][0]["in"][2] = nlohmann::json::object({{"var", id}});
    jx["eqns"].insert(jx["eqns"].begin(),
                      convert(in["id"].get<int>(), id, "f32", in["type"]["shape"]));
  }
  const std::string xi = dir.write("x-i32.json", x.dump());
  const Result r = run({"check", "--program", xi, "cases/dp-step/example1.json"});
  BOOST_TEST(r.code == 2, r.out << r.err);
  BOOST_TEST(r.out.empty(), r.out);
  BOOST_TEST(r.err == "meshrun: " + xi + ": inputs[2].dtype: i32, but dp-step takes x as f32\n",
             r.err);
  // Without its "exercise" the file is a program like any other, and example1's expected loss,
  // 121.0, is an integer: the i32 loss passes the comparison. The dtype is what tells them apart.
  loss.erase("exercise");
  const std::string plain = dir.write("loss-i32-plain.json", loss.dump());
  const Result p = run({"run", plain, "cases/dp-step/example1.json"});
  BOOST_TEST(p.code == 0, p.out << p.err);
  BOOST_TEST(has(p.out, "\"loss\":121.0}"), p.out);
}
}  // namespace

namespace {

// The program file is an input: no output may replace it (exit 2, before anything runs).
BOOST_AUTO_TEST_CASE(the_program_file_is_never_written_over) {
  meshrun::testing::TempDir dir;
  const std::string prog = dir.write("p.json", slurp(kSource + "/cases/programs/dp-step.json"));
  const std::string before = slurp(prog);
  const Result o = run({"run", prog, "cases/dp-step/example1.json", "-o", prog});
  BOOST_TEST(o.code == 2);
  BOOST_TEST(o.err == "meshrun: --output: " + prog +
                          " is the program file being read; refusing to overwrite it\n");
  const Result j = run({"check", "--program", prog, "--json", prog, "cases/dp-step/example1.json"});
  BOOST_TEST(j.code == 2);
  BOOST_TEST(j.err ==
             "meshrun: --json: " + prog + " is the program file; refusing to overwrite it\n");
  BOOST_TEST(slurp(prog) == before);
  BOOST_TEST(o.out == "");
}

// Every option of the program commands means the same on a program file: for each, `meshrun run`
// of the exported dp-step writes what `meshrun dp-step` writes (stdout, stderr, files), and the
// options that look at the run (--trace, --profile, --timings) see the interpreted program's own
// collectives.
BOOST_AUTO_TEST_CASE(every_program_option_works_on_a_program_file) {
  meshrun::testing::TempDir dir;
  const std::string prog = "cases/programs/dp-step.json";
  const std::string c = "cases/dp-step/example2.json";
  const std::vector<std::vector<std::string>> same = {
      {"--exact"},          {"--precision", "3"}, {"--devices", "4"},
      {"--mesh", "data=2"}, {"--show-sharding"},  {"--exact", "--devices", "1"},
  };
  for (const auto& opts : same) {
    std::vector<std::string> interp = {"run", prog, c}, hand = {"dp-step", c};
    interp.insert(interp.end(), opts.begin(), opts.end());
    hand.insert(hand.end(), opts.begin(), opts.end());
    const Result a = run(interp), b = run(hand);
    BOOST_TEST(a.code == 0, opts[0] << ": " << a.err);
    BOOST_TEST(a.out == b.out, opts[0]);
    BOOST_TEST(a.err == b.err, opts[0]);
  }
  // -o and --save-npy: the same bytes as the hand-written program's files.
  const Result o1 =
      run({"run", prog, c, "--exact", "-o", dir / "run.json", "--save-npy", dir / "run-npy"});
  const Result o2 =
      run({"dp-step", c, "--exact", "-o", dir / "hand.json", "--save-npy", dir / "hand-npy"});
  BOOST_TEST(o1.code == 0, o1.err);
  BOOST_TEST(o1.out == "");
  BOOST_TEST(slurp(dir / "run.json") == slurp(dir / "hand.json"));
  BOOST_TEST(has(slurp(dir / "run.json"), "\"loss\":0.3039125"));
  for (const char* f : {"w.npy", "b.npy", "loss.npy"}) {
    BOOST_TEST(!slurp(dir / (std::string("run-npy/") + f)).empty(), f);
    BOOST_TEST(
        slurp(dir / (std::string("run-npy/") + f)) == slurp(dir / (std::string("hand-npy/") + f)),
        f);
  }
  // --atol/--rtol against a case's expected: a loss off by 0.01 fails at the default tolerance
  // and passes at --atol 0.02, as with the hand-written program.
  nlohmann::json off = meshrun::testing::parse_json(slurp(kSource + "/" + c));
  off["expected"]["loss"] = 0.3139125;
  const std::string offc = dir.write("off.json", off.dump());
  const Result strict = run({"run", prog, offc});
  BOOST_TEST(strict.code == 1);
  BOOST_TEST(has(strict.err, "loss"), strict.err);
  BOOST_TEST(run({"run", prog, offc, "--atol", "0.02"}).code == 0);
  BOOST_TEST(run({"run", prog, offc, "--rtol", "0.1"}).code == 0);
  BOOST_TEST(run({"dp-step", offc, "--atol", "0.02"}).code == 0);
  // --profile and --timings: the interpreted program's own psum over 'data' is in the trace.
  const Result p = run({"run", prog, c, "--profile", dir / "p.json", "--timings"});
  BOOST_TEST(p.code == 0, p.err);
  const nlohmann::json prof = meshrun::testing::parse_json(slurp(dir / "p.json"));
  const nlohmann::json& events = prof.is_object() ? prof.at("traceEvents") : prof;
  bool psum = false;
  for (const auto& e : events) psum = psum || e.value("name", "") == "psum #1 'data'";
  BOOST_TEST(psum);
  BOOST_TEST(lines_of(p.out).size() == 1u, p.out);  // the result; --timings goes to stderr
  BOOST_TEST(has(p.err, "\"flops\":"), p.err);
}

// A case whose shapes no export takes: one line naming the input and the shapes, exit 2. A
// fixed-shape export says the shape it takes; a file of one export per shape says that none of
// them fits.
BOOST_AUTO_TEST_CASE(a_case_no_export_takes_is_named_with_the_shapes) {
  const Result fixed =
      run({"run", "cases/submissions/dp-step/closes-over-x.json", "cases/dp-step/n256-d4-k3.json"});
  BOOST_TEST(fixed.code == 2);
  BOOST_TEST(fixed.err ==
             "meshrun: cases/submissions/dp-step/closes-over-x.json: input.w: has shape (4, 3), "
             "the program takes f32[1,1]\n");
  meshrun::testing::TempDir dir;
  nlohmann::json c =
      meshrun::testing::parse_json(slurp(kSource + "/tests/jax/programs/attention/case1.json"));
  for (const char* n : {"x", "y"}) {  // 32 rows of D = 4: exported for 16x4, 32x6, 16x5, 48x3
    nlohmann::json& a = c["input"][n];
    const nlohmann::json rows = a;
    for (const auto& r : rows) a.push_back(r);
  }
  c.erase("expected");
  const Result none =
      run({"run", "tests/jax/programs/attention.json", dir.write("c.json", c.dump())});
  BOOST_TEST(none.code == 2);
  BOOST_TEST(none.out == "");
  BOOST_TEST(lines_of(none.err).size() == 1u, none.err);
  BOOST_TEST(has(none.err,
                 "tests/jax/programs/attention.json: input.x: has shape (32, 4), the "
                 "program takes f32[16,4] (the first of its 4 exports for "),
             none.err);
  BOOST_TEST(has(none.err, "none takes these shapes)"), none.err);
}

// A failing or stalled device in an interpreted body: exit 3 and the one line the built-in
// programs print, within the timeout.
BOOST_AUTO_TEST_CASE(a_failing_or_stalled_device_in_an_interpreted_body_is_exit_3) {
  const Result fail = run({"run", "cases/programs/dp-step.json", "cases/dp-step/example1.json",
                           "--inject", "fail:7@1"});
  BOOST_TEST(fail.code == 3);
  BOOST_TEST(fail.out == "");
  BOOST_TEST(lines_of(fail.err).size() == 1u, fail.err);
  BOOST_TEST(has(fail.err, "failed at psum #1 on 'data': injected failure (--inject fail:7@1)"),
             fail.err);
  const Result stall = run({"run", "cases/programs/tp-mlp.json", "cases/tp-mlp/example1.json",
                            "--inject", "stall:3@1", "--timeout", "1"});
  BOOST_TEST(stall.code == 3);
  BOOST_TEST(stall.err ==
             "meshrun: psum #1 on 'model': timed out after 1000 ms; device(s) 3 "
             "never arrived (3 stalled by --inject)\n");
  BOOST_TEST(stall.seconds < 10);
}

}  // namespace
