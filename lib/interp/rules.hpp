// Grading the user's program: the structural rules of the exercise a program file names
// ("exercise": "dp-step"), checked on the program itself -- its file and the trace of its run --
// never on meshrun's own code:
//   - the built-in exercise's rules on the trace (x and y handed as blocks, the reductions over
//     the axis, the hidden layer left split), plus only psum/pmean over the exercise's axes;
//   - on the file: every input the exercise has is an input of the program (not closed over as
//     a constant), lr reaches the outputs (not a literal baked in), and, for tp-mlp and
//     mlp-train, b2 never flows into the psum over 'model' (added once, after it).
#pragma once

#include <map>
#include <vector>

#include "interp/ir.hpp"
#include "trace/structure.hpp"

namespace meshrun::interp {

// The rules of `file.exercise` ("" or an unknown exercise: none -- the reader refuses unknown
// ones); each rule's description names it.
std::vector<StructuralRule> exercise_rules(const ProgramFile& file);

// The exercises meshrun can grade.
bool known_exercise(const std::string& name);

// For each shard_map equation of `exp` (any nesting), per operand: the program input it is --
// derived from that input alone, with its shape (x, or a copy or conversion of x) -- or -1.
// The trace names such an operand after the input, so the exercises' rules find it.
std::map<const Eqn*, std::vector<int>> shard_map_operand_inputs(const ProgramFile& file,
                                                                const Export& exp);

}  // namespace meshrun::interp
