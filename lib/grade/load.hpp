// A program file loaded to be graded: read, the exercise it names (or --exercise) found, and
// built by the interpreter (interp/program.hpp's build_program) with that exercise's rules.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "interp/program.hpp"

namespace meshrun::interp {

// Reads `path` (read_program_file) and builds its ProgramDef; InputError naming the file.
// `exercise`, when not empty, replaces the file's "exercise" (--exercise): a shipped exercise's
// name or a folder holding exercise.json (resolve_exercise). A file naming an exercise meshrun
// does not know is refused ("exercise: ... is not an exercise meshrun grades").
std::unique_ptr<LoadedProgram> load_program(const std::string& path, std::uint64_t max_bytes,
                                            std::chrono::milliseconds open_wait,
                                            const std::string& exercise);

}  // namespace meshrun::interp
