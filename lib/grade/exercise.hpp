// An exercise as data: cases/exercises/<name>/exercise.json holds its inputs and outputs (name,
// dtype, symbolic shape, partition spec), its mesh, the reference program file, where its
// example cases are, and its rules in a small declarative form ({"rule": "input_split", "input":
// "w1", "dim": 1}) -- one generic implementation per rule kind (rule_kinds.hpp), no exercise's
// name in C++. docs/grading.md lists the kinds; adding an exercise is adding a folder.
//
// The committed files are embedded into meshrun at build time (lib/CMakeLists.txt,
// cmake/embed_exercises.cmake): `--exercise NAME` and a program file's "exercise" find them with
// no path at runtime. `--exercise DIR` reads the folder DIR instead (an exercise not shipped).
// The files in the tree stay the source: tests/unit/interp/exercise_test.cpp fails when the
// embedded copy and the file differ.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interp/ir.hpp"
#include "interp/program.hpp"
#include "programs/program.hpp"

namespace meshrun::interp {

// An exercise: the Graded the interpreter sees (its name, def, dtypes and rules_for, which is
// exercise_rules), and what grading alone reads.
struct Exercise : Graded {
  std::string source;  // the file it was read from (messages): "cases/exercises/dp-step/..."
  std::string folder;  // its folder, for the paths it holds ("" if not known)
  std::vector<MeshShape> meshes;  // the meshes a submission is exported for (python/)
  std::string reference;          // the reference program file, relative to `folder`
  // That file read and built, when load_exercise_folder read it (no built-in program has the
  // exercise's name); else nullptr, and a rule needing the reference reads it on first use.
  std::shared_ptr<const LoadedProgram> reference_program;
  std::string cases;           // the example cases' folder, relative to `folder`
  std::vector<bool> positive;  // per input of def: marked "positive" (lr), drawn as the case's
  // Each rule as written, checked at parse: a known kind, its fields of the right types, naming
  // the exercise's own inputs, outputs and axes.
  std::vector<nlohmann::json> rules;
};

// Parses an exercise file's text; InputError "<source>: <field>: ..." (one line, exit 2): not
// JSON, a missing or mistyped field, an unknown rule kind, a rule naming what the exercise lacks.
std::shared_ptr<const Exercise> parse_exercise(const std::string& text, const std::string& source,
                                               const std::string& folder);

// parse_exercise's work on JSON already read (load_exercise_folder reads the file as a program
// file is): InputError "<field>: ..." without the file's name, which the caller adds.
std::shared_ptr<Exercise> exercise_from_json(const nlohmann::json& root);

// The exercise's reference program file: `reference` under its folder (as written when absolute
// or when the folder is not known).
std::string reference_path(const Exercise& ex);

// The exercise of folder `dir` (its exercise.json), read as a program file is: within
// `max_bytes` (--max-input-bytes), its open bounded by `open_wait` (--timeout). An exercise whose
// name no built-in program has must name a reference that is a program file: it is read here
// (Exercise::reference_program), else InputError "<dir>/exercise.json: reference: cannot read
// ..." or "reference: not a program file: ..." (exit 2) before any grading, not a rule that fails
// the student's program when the reference is first needed. Its inputs and outputs must be the
// reference's (the built-in program's or the file's), in that order, of those ranks and dtypes:
// else InputError "<dir>/exercise.json: inputs[i].name: ..." (or .shape, .dtype, or outputs).
std::shared_ptr<const Exercise> load_exercise_folder(
    const std::string& dir, std::uint64_t max_bytes = std::uint64_t{1} << 20,
    std::chrono::milliseconds open_wait = std::chrono::milliseconds(10000));

// The shipped exercises (embedded), by name; nullptr when there is none.
std::shared_ptr<const Exercise> find_exercise(const std::string& name);
bool known_exercise(const std::string& name);
// "dp-step, tp-mlp, ...": the shipped exercises' names, in the order meshrun lists them.
std::string exercise_names();
// --exercise ARG: a shipped exercise's name, or a folder holding exercise.json (an ARG holding
// '/' or naming a directory). InputError("--exercise", ...) otherwise.
std::shared_ptr<const Exercise> resolve_exercise(
    const std::string& arg, std::uint64_t max_bytes = std::uint64_t{1} << 20,
    std::chrono::milliseconds open_wait = std::chrono::milliseconds(10000));

// The embedded files: (path in the tree, text), generated at build time.
struct EmbeddedFile {
  const char* path;
  const char* text;
};
const std::vector<EmbeddedFile>& embedded_exercise_files();

}  // namespace meshrun::interp
