// The run side of a loaded program (program.hpp): internal to lib/interp, shared by
// program.cpp (which builds the ProgramDef) and program_run.cpp (what its functions run).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "interp/program.hpp"

namespace meshrun::interp::detail {

// Load-time checks: a case holds arrays of at most kMaxRank dimensions, and results are written
// so, each output of one rank in every export.
void check_input_ranks(const ProgramFile& file);
void check_output_ranks(const ProgramFile& file);
// Per run: a result with no elements is refused.
void check_output_sizes(const ProgramFile& file, const Binding& b);
// Per case: an i32 input holds integers meshrun holds exactly, a bool input 0 or 1.
void check_input_values(const LoadedProgram& lp, const std::vector<TensorRef>& inputs);

// The file's inputs' shapes, in the file's order, from the def's inputs.
std::vector<Shape> file_shapes(const LoadedProgram& lp, const std::vector<TensorRef>& inputs);

// ProgramDef::computation of a loaded program (built last, from its def's inputs and outputs):
// a plain program's one shard_map, or the equations around its shard_maps. It refers to `lp`.
std::shared_ptr<const Computation> file_computation(LoadedProgram& lp);

}  // namespace meshrun::interp::detail
