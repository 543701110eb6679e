// Exercises as data (lib/grade/exercise.hpp): the embedded copies are the files in the tree,
// each shipped exercise parses, a hostile exercise file is refused with one line naming the file
// and the field, the rule kinds are one registry refusing a kind given twice, and the exercises
// with a built-in program say what the built-in says (inputs, outputs, dims, mesh).
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "grade/exercise.hpp"
#include "grade/rule_kinds.hpp"
#include "grade/semantic_rules.hpp"
#include "programs/program.hpp"
#include "support/errors.hpp"
#include "tensor/tensor.hpp"
#include "trace/trace.hpp"

namespace {

namespace fs = std::filesystem;
using meshrun::InputError;
using namespace meshrun::interp;

const std::string kSource = MESHRUN_SOURCE_DIR;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The message parse_exercise throws for `text`, "" when it parses.
std::string refusal(const std::string& text) {
  try {
    parse_exercise(text, "ex.json", "");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A small valid exercise with `rules` (JSON text of the array's elements).
std::string exercise_with(const std::string& rules) {
  return R"({"format": "meshrun-exercise", "version": 1, "name": "tiny", "summary": "s",
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"], "spec": ["ring"]}],
    "outputs": [{"name": "out", "dtype": "f32", "shape": ["N"], "spec": []}],
    "mesh": [["ring", 8]], "meshes": [[["ring", 8]]], "reference": "r.json", "cases": "cases",
    "rules": [)" +
         rules + "]}";
}

BOOST_AUTO_TEST_CASE(every_embedded_exercise_is_the_file_in_the_tree) {
  std::set<std::string> in_tree, embedded;
  for (const auto& e : fs::directory_iterator(kSource + "/cases/exercises")) {
    if (fs::exists(e.path() / "exercise.json"))
      in_tree.insert("cases/exercises/" + e.path().filename().string() + "/exercise.json");
  }
  for (const EmbeddedFile& f : embedded_exercise_files()) {
    embedded.insert(f.path);
    BOOST_TEST(slurp(kSource + "/" + f.path) == std::string(f.text),
               f.path << ": the embedded copy differs from the file (rebuild)");
  }
  BOOST_TEST(in_tree == embedded);
  BOOST_TEST(in_tree.size() >= 3u);
}

BOOST_AUTO_TEST_CASE(every_shipped_exercise_parses_and_is_found_by_name) {
  for (const EmbeddedFile& f : embedded_exercise_files()) {
    std::shared_ptr<const Exercise> ex;
    BOOST_CHECK_NO_THROW(
        ex = load_exercise_folder(fs::path(kSource + "/" + f.path).parent_path().string()));
    BOOST_REQUIRE(ex);
    BOOST_TEST(find_exercise(ex->name) != nullptr, ex->name);
    BOOST_TEST(!ex->rules.empty(), ex->name);
    // The exercise's reference program and example cases are in the tree.
    BOOST_TEST(fs::exists(ex->folder + "/" + ex->reference), ex->name << ": " << ex->reference);
    BOOST_TEST(fs::is_directory(ex->folder + "/" + ex->cases), ex->name << ": " << ex->cases);
  }
  BOOST_TEST(find_exercise("pipeline") == nullptr);
}

// An exercise with a built-in program says what the built-in says: a case is read the same.
BOOST_AUTO_TEST_CASE(the_built_in_exercises_agree_with_their_programs) {
  for (const char* name : {"dp-step", "tp-mlp", "mlp-train"}) {
    const auto ex = find_exercise(name);
    const meshrun::ProgramDef* p = meshrun::find_program(name);
    BOOST_REQUIRE(ex);
    BOOST_REQUIRE(p);
    BOOST_TEST(ex->def.mesh == p->mesh, name);
    BOOST_TEST(ex->def.axis == p->axis, name);
    BOOST_TEST(ex->def.summary == p->summary, name);
    BOOST_REQUIRE(ex->def.inputs.size() == p->inputs.size());
    for (std::size_t i = 0; i < p->inputs.size(); ++i) {
      BOOST_TEST(ex->def.inputs[i].name == p->inputs[i].name, name);
      BOOST_TEST(ex->def.inputs[i].dims == p->inputs[i].dims, name);
    }
    BOOST_REQUIRE(ex->def.outputs.size() == p->outputs.size());
    for (std::size_t i = 0; i < p->outputs.size(); ++i) {
      BOOST_TEST(ex->def.outputs[i].name == p->outputs[i].name, name);
      BOOST_TEST(ex->def.outputs[i].dims == p->outputs[i].dims, name);
    }
    BOOST_TEST(static_cast<bool>(ex->def.check_values) == static_cast<bool>(p->check_values));
  }
}

// The same with `meshes` (JSON text) for the meshes a submission is exported for.
std::string with_meshes(const std::string& meshes) {
  std::string text = exercise_with(R"({"rule": "output_replicated", "output": "out"})");
  const std::string from = R"("meshes": [[["ring", 8]]])";
  return text.replace(text.find(from), from.size(), "\"meshes\": " + meshes);
}

BOOST_AUTO_TEST_CASE(a_hostile_exercise_file_is_refused_in_one_line_naming_the_field) {
  BOOST_TEST(refusal(exercise_with(R"({"rule": "output_replicated", "output": "out"})")) == "");
  const std::pair<std::string, std::string> cases[] = {
      {"not json", "ex.json: invalid JSON at line 1, column 2"},
      {"[]", "ex.json: an exercise file must be a JSON object"},
      {exercise_with(R"({"rule": "psum_everything"})"),
       "ex.json: rules[0].rule: unknown rule kind \"psum_everything\" (known: added_once,"},
      {exercise_with(R"({"rule": "input_split", "input": "w", "dim": 0})"),
       "ex.json: rules[0].input: \"w\" is not an input of tiny"},
      {exercise_with(R"({"rule": "input_split", "input": "x"})"),
       "ex.json: rules[0].dim: missing (rule input_split needs it)"},
      {exercise_with(R"({"rule": "input_split", "input": "x", "dim": 0, "axis": "data"})"),
       "ex.json: rules[0].axis: axis \"data\" is not an axis of mesh"},
      {exercise_with(R"({"rule": "input_split", "input": "x", "dim": 0, "dims": 1})"),
       "ex.json: rules[0].dims: unknown field (this one takes rule, says, input, dim, axis)"},
      {exercise_with(R"({"rule": "output_replicated", "output": "out", "says": 3})"),
       "ex.json: rules[0].says: must be a string"},
      {exercise_with(R"({"rule": "collectives_only", "ops": [], "axis": "ring"})"),
       "ex.json: rules[0].ops: must name at least one"},
      // An op the trace never records would fail every program (or, beside a real one, pass
      // silently): refused, as an unknown rule kind is.
      {exercise_with(R"({"rule": "collectives_only", "ops": ["bogus"], "axis": "ring"})"),
       "ex.json: rules[0].ops[0]: unknown collective \"bogus\" (known: all_gather, all_to_all, "
       "pmax, pmean, pmin, ppermute, psum, psum_scatter)"},
      {exercise_with(R"({"rule": "collectives_only", "ops": ["psum", "bogus"], "axis": "ring"})"),
       "ex.json: rules[0].ops[1]: unknown collective \"bogus\""},
      {exercise_with(R"({"rule": "collectives_only", "ops": ["ppermute"], "axis": "ring",
                         "neighbours": "yes"})"),
       "ex.json: rules[0].neighbours: must be true or false, not a string"},
      {exercise_with(R"(3)"), "ex.json: rules[0]: must be an object, not a number"},
      {exercise_with(R"({"rule": "same_function", "apart": "x", "apart_along": "diagonals",
                         "apart_outputs": ["out"]})"),
       "ex.json: rules[0].apart_along: must be \"rows\" or \"columns\", not \"diagonals\""},
      {exercise_with(R"({"rule": "same_function", "apart": "z"})"),
       "ex.json: rules[0].apart: \"z\" is not an input of tiny"},
      {exercise_with(R"({"rule": "output_spec", "output": "out", "spec": ["data"]})"),
       "ex.json: rules[0].spec[0]: axis \"data\" is not an axis of mesh"},
      {with_meshes(R"([[["ring", 4]]])"),
       "ex.json: meshes: does not hold mesh, Mesh('ring': 8) (the default mesh needs an export"},
      {with_meshes(R"([[["ring", 8]], [["data", 8]]])"),
       "ex.json: meshes[1]: Mesh('data': 8) has other axes than mesh, Mesh('ring': 8)"},
      {with_meshes(R"([[["ring", 8]], [["ring", 8]]])"),
       "ex.json: meshes[1]: Mesh('ring': 8) is given twice"},
  };
  for (const auto& [text, starts] : cases) {
    const std::string got = refusal(text);
    BOOST_TEST(got.rfind(starts, 0) == 0u, "got: " << got << "\nwant: " << starts);
    BOOST_TEST(got.find('\n') == std::string::npos, got);
  }
}

BOOST_AUTO_TEST_CASE(a_rule_kind_given_twice_is_refused) {
  RuleKinds kinds;
  const auto make = [](const nlohmann::json&, const RuleContext&) {
    return meshrun::StructuralRule{"r", [](const meshrun::Trace&) { return std::nullopt; }};
  };
  kinds.add({"one", {}, nullptr, make});
  BOOST_CHECK_THROW(kinds.add({"one", {}, nullptr, make}), std::logic_error);
  BOOST_CHECK_THROW(kinds.add({"none", {}, nullptr, nullptr}), std::logic_error);
  BOOST_TEST(kinds.names() == "one");
  // Every shipped kind once: the registry built without throwing, and a kind is found by name.
  BOOST_TEST(rule_kinds().find("mean_gradient_update") != nullptr);
  BOOST_TEST(rule_kinds().find("psum_everything") == nullptr);
}

// A rule that runs the program again passes on what the re-run throws as the rule's failure --
// but a broken invariant of meshrun's (InternalError) is meshrun's bug, exit 4, never a FAIL of
// the program graded: here dp-step run again on inputs of the wrong ranks (what an exercise
// whose inputs are not its reference's order handed the reference).
BOOST_AUTO_TEST_CASE(an_internal_error_in_a_re_run_is_not_a_rule_failure) {
  const meshrun::ProgramDef* p = meshrun::find_program("dp-step");
  BOOST_REQUIRE(p);
  std::vector<meshrun::Tensor> in;
  for (std::size_t i = 0; i < p->inputs.size(); ++i) in.push_back(meshrun::Tensor::scalar(1));
  const std::vector<meshrun::TensorRef> in_refs = meshrun::refs(in);
  const std::vector<meshrun::Tensor> out(p->outputs.size(), meshrun::Tensor::scalar(1));
  meshrun::Trace t;
  t.mesh = p->mesh;
  t.input_values = &in_refs;
  t.output_values = &out;
  const meshrun::StructuralRule once = added_once(*p, "b", "b");
  BOOST_CHECK_THROW(once.check(t), meshrun::InternalError);
  const meshrun::StructuralRule mean = mean_gradient_update(
      *p, [p]() -> const meshrun::ProgramDef& { return *p; }, {"w", "b"}, "data");
  BOOST_CHECK_THROW(mean.check(t), meshrun::InternalError);
}

}  // namespace
