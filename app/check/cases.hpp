// What `meshrun check` and `meshrun check --update` share: finding the case files under the
// PATH arguments, and running one case on a mesh.
#pragma once

#include <string>
#include <vector>

#include "commands.hpp"
#include "io/case_reader.hpp"
#include "io/file_set.hpp"
#include "support/errors.hpp"
#include "trace/structure.hpp"

namespace meshrun {

// One entry per case: its path, or the reason it cannot be a case (reported as an ERROR).
struct Found {
  std::string path;
  std::string problem;    // "" for a readable file
  std::size_t suite = 0;  // index of the PATH argument it was found under
};

// The cases under the paths: a file as given, the *.json files under a directory (recursively, in
// sorted order, directory links followed once each). Every path is resolved before any case
// runs, so a typo fails fast (InputError); a PATH that holds no case throws NoCasesError.
std::vector<Found> collect_cases(const std::vector<std::string>& paths);

// A case as it ran: what it computed, and whether the structure of the run kept the rules.
struct RanCase {
  const ProgramDef* program = nullptr;
  Case c;
  std::vector<Tensor> outputs;
  StructuralVerdict structure;
  std::vector<std::string> unfired;  // each --inject that never fired in this case (its message)
};

// A case's .npy input that is also a file the command writes (--junit, --json): the command
// ends with exit 2 before writing it, not one ERROR line (io/file_set.hpp).
class FileClash : public InputError {
 public:
  explicit FileClash(const InputError& e) : InputError(e) {}
};

// Reads and runs the case at `file`; with `files`, its .npy inputs are checked against the files
// the command writes (FileClash). Throws what the case itself can fail with (InputError,
// CollectiveError, DeviceError) -- ungraded cases, see case_error -- and anything else for a
// failure of meshrun (internal, output), which ends the whole command.
// `program`: the program to run it with (check --program); nullptr: the one the case names.
RanCase run_case(const std::string& file, const RunFlags& flags, FileSet* files = nullptr,
                 const ProgramDef* program = nullptr);

// The one-line reason a case could not run, when `e` is such a failure (the message of an
// InputError without the leading "file: " that the line already shows); "" otherwise.
std::string case_error(const std::exception& e, const std::string& file);

// `meshrun check --update PATH...`: blesses the `expected` of every case under `paths`
// (check/update.cpp). `program`: the program to run them with (--program, read from
// `program_file`); nullptr: the one each case names.
void run_update(const std::vector<std::string>& paths, const RunFlags& flags,
                const ProgramDef* program = nullptr, const std::string& program_file = "");

}  // namespace meshrun
