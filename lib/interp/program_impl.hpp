// The run side of a loaded program (program.hpp): internal to lib/interp, shared by
// program.cpp (which builds the ProgramDef) and program_run.cpp (what its functions run).
#pragma once

#include <string>
#include <vector>

#include "interp/program.hpp"

namespace meshrun::interp::detail {

// Load-time checks: a case holds arrays of rank 0, 1 or 2, and results are written so.
void check_input_ranks(const ProgramFile& file);
void check_output_ranks(const ProgramFile& file);
// Per run: a result with no elements is refused.
void check_output_sizes(const ProgramFile& file, const Binding& b);
// Per case: an i32 input holds integers meshrun holds exactly, a bool input 0 or 1.
void check_input_values(const LoadedProgram& lp, const std::vector<TensorRef>& inputs);

// The file's inputs' shapes, in the file's order, from the def's inputs.
std::vector<Shape> file_shapes(const LoadedProgram& lp, const std::vector<TensorRef>& inputs);

// ProgramDef::body of a plain program.
std::vector<Tensor> plain_body(const LoadedProgram& lp, Device& dev, std::vector<Tensor>& blocks);
// ProgramDef::run_with of one with equations around its shard_maps.
std::vector<Tensor> whole_run(const LoadedProgram& lp, const MeshShape& mesh,
                              const std::vector<TensorRef>& inputs,
                              const ProgramDef::RunShardMap& run);
// ProgramDef::call_of: the ShardMapCall whole_run made under `key` (on another rank).
ProgramDef::ShardMapCall call_of_key(const LoadedProgram& lp, const std::string& key);

}  // namespace meshrun::interp::detail
