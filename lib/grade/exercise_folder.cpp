// An exercise given as a folder (`--exercise DIR`, exercise.hpp): its file read as a program file
// is, its reference program read and checked against it before any grading.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "grade/exercise.hpp"
#include "interp/program.hpp"
#include "interp/program_json.hpp"
#include "io/json_text.hpp"
#include "programs/program.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

using json = nlohmann::json;

// The dtype of each input and output of a reference program file, in its def's order (an input
// of the def the file does not take has none).
struct ArgDtypes {
  std::vector<std::optional<DType>> inputs, outputs;
};
ArgDtypes dtypes_of(const LoadedProgram& lp) {
  ArgDtypes t;
  t.inputs.resize(lp.def.inputs.size());
  for (std::size_t i = 0; i < lp.file.inputs.size() && i < lp.def_input.size(); ++i)
    t.inputs.at(lp.def_input[i]) = lp.file.inputs[i].dtype;
  const Jaxpr& top = lp.file.exports.front().jaxpr;
  for (const Atom& a : top.outvars) t.outputs.emplace_back(dtype_of(top, a));
  return t;
}
// The built-in programs take and return f32 only.
ArgDtypes all_f32(const ProgramDef& def) {
  return {std::vector<std::optional<DType>>(def.inputs.size(), DType::kF32),
          std::vector<std::optional<DType>>(def.outputs.size(), DType::kF32)};
}

// The exercise's inputs and outputs are the reference's (`what`), in its order, of its ranks and
// dtypes: the rules that run the reference hand it the case's arrays in the exercise's order, and
// a program graded as the exercise must have its dtypes (program.cpp), as the reference then does.
void same_args(const Exercise& ex, const ProgramDef& ref, const ArgDtypes& ref_dtypes,
               const std::string& what) {
  for (const char* key : {"inputs", "outputs"}) {
    const bool inputs = std::string(key) == "inputs";
    const std::vector<ArgDef>& mine = inputs ? ex.def.inputs : ex.def.outputs;
    const std::vector<ArgDef>& theirs = inputs ? ref.inputs : ref.outputs;
    std::string names;
    for (const ArgDef& a : theirs) names += (names.empty() ? "" : ", ") + a.name;
    const std::string verb = inputs ? " takes " : " returns ";
    if (mine.size() != theirs.size()) {
      throw InputError(key, std::to_string(mine.size()) + " " + key + ", the reference " + what +
                                verb + std::to_string(theirs.size()) + " (" + names + ")");
    }
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
      if (mine[i].name != theirs[i].name) {
        throw InputError(at + ".name", "\"" + mine[i].name + "\" where the reference " + what +
                                           verb + "\"" + theirs[i].name + "\" (" + names +
                                           ", in that order)");
      }
      if (mine[i].dims.size() != theirs[i].dims.size()) {
        const auto dims = [](std::size_t n) {
          return std::to_string(n) + (n == 1 ? " dimension" : " dimensions");
        };
        throw InputError(at + ".shape", dims(mine[i].dims.size()) + " where the reference " + what +
                                            verb + mine[i].name + " with " +
                                            dims(theirs[i].dims.size()));
      }
      const DType want = (inputs ? ex.input_dtypes : ex.output_dtypes).at(i);
      const std::optional<DType> got = (inputs ? ref_dtypes.inputs : ref_dtypes.outputs).at(i);
      if (got && *got != want) {
        throw InputError(at + ".dtype", std::string(dtype_name(want)) + " where the reference " +
                                            what + verb + mine[i].name + " as " + dtype_name(*got));
      }
    }
  }
}

}  // namespace

std::string reference_path(const Exercise& ex) {
  return ex.folder.empty() || ex.reference.empty() || ex.reference[0] == '/'
             ? ex.reference
             : ex.folder + "/" + ex.reference;
}

std::shared_ptr<const Exercise> load_exercise_folder(const std::string& dir,
                                                     std::uint64_t max_bytes,
                                                     std::chrono::milliseconds open_wait) {
  const std::string path = dir + (dir.empty() || dir.back() == '/' ? "" : "/") + "exercise.json";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError("--exercise", "cannot read " + path);
  try {
    // Read as a program file is: within a byte limit, its open bounded (a FIFO never written
    // does not hang meshrun), the JSON's depth and values limited, a duplicate key refused.
    std::shared_ptr<Exercise> ex =
        exercise_from_json(read_program_json(path, max_bytes, open_wait));
    ex->source = path;
    ex->folder = dir;
    // The reference is read here, as the exercise's error when it is missing or not a program
    // file -- unless a built-in program of its name stands in for it (rule_kinds.cpp).
    if (const ProgramDef* built_in = find_program(ex->name)) {
      same_args(*ex, *built_in, all_f32(*built_in), "(the built-in program " + ex->name + ")");
    } else {
      const std::string reference = reference_path(*ex);
      struct stat ref {};
      if (::stat(reference.c_str(), &ref) != 0)
        throw InputError("reference", "cannot read " + reference + ": " + std::strerror(errno));
      if (!S_ISREG(ref.st_mode))
        throw InputError("reference", "cannot read " + reference + ": not a regular file");
      try {
        ex->reference_program = load_reference_program(reference);
      } catch (const InputError& e) {
        // e.what() names the reference file and its field.
        throw InputError("reference", std::string("not a program file: ") + e.what());
      }
      same_args(*ex, ex->reference_program->def, dtypes_of(*ex->reference_program), reference);
    }
    return ex;
  } catch (const InputError& e) {
    throw InputError(path, e.what());
  } catch (const json::exception& e) {
    throw InputError(path, e.what());
  }
}

std::shared_ptr<const Exercise> resolve_exercise(const std::string& arg, std::uint64_t max_bytes,
                                                 std::chrono::milliseconds open_wait) {
  struct stat st {};
  if (arg.find('/') != std::string::npos ||
      (::stat(arg.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && !known_exercise(arg))) {
    return load_exercise_folder(arg, max_bytes, open_wait);
  }
  if (auto ex = find_exercise(arg)) return ex;
  throw InputError("--exercise", excerpt(arg) + " is not an exercise meshrun grades (" +
                                     exercise_names() + ") nor a folder holding exercise.json");
}

}  // namespace meshrun::interp
