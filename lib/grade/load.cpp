// A program file loaded to be graded (load.hpp).
#include "grade/load.hpp"

#include "grade/exercise.hpp"
#include "interp/reader.hpp"
#include "io/json_text.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {

std::unique_ptr<LoadedProgram> load_program(const std::string& path, std::uint64_t max_bytes,
                                            std::chrono::milliseconds open_wait,
                                            const std::string& exercise) {
  ProgramFile file = read_program_file(path, max_bytes, open_wait);
  std::shared_ptr<const Exercise> ex;
  if (!exercise.empty()) {
    ex = resolve_exercise(exercise, max_bytes, open_wait);
  } else if (!file.exercise.empty()) {
    ex = find_exercise(file.exercise);
    if (!ex) {
      throw InputError(file.path, "exercise: " + excerpt(file.exercise) +
                                      " is not an exercise meshrun grades (" + exercise_names() +
                                      ")");
    }
  }
  return build_program(std::move(file), std::move(ex));
}

}  // namespace meshrun::interp
