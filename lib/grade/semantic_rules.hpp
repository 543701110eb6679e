// The exercises' rules that are facts about what the user's program computes, checked by running
// it again -- in this process, on a mesh of the run's shape, with no --inject -- on inputs made
// from the case's, so that any program computing the right thing passes whatever its style:
//   added_once           -- out is b2 plus what does not depend on b2: moving b2 by d moves out
//                           by exactly d (tp-mlp), or moving b2 and y together by d leaves the
//                           loss as it is (mlp-train, whose out is not an output) -- the names
//                           are the exercise file's (rule kind added_once);
//   mean_gradient_update -- param_in - param_out is the update of the exercise's reference
//                           program (lr times the mean gradient) on the same inputs, within the
//                           numbers' tolerance; a multiple s != 1 of it is named (n times: the
//                           sum of the n devices' gradients).
// Each needs the run's values (Trace::input_values, output_values); a trace without them (not
// graded) passes. What the run again throws is the rule's failure ("could not run the program
// again on changed inputs: ..."), except an InternalError: meshrun's bug, thrown on (exit 4).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "programs/program.hpp"
#include "trace/structure.hpp"

namespace meshrun::interp {

// `program` must outlive the rule (the LoadedProgram's def).
// `input` (b2) is counted once in `output` (out): moving it by d moves the output by d -- or, for
// an output the program does not return, moving it and `target` (y) together by d leaves `loss`.
StructuralRule added_once(const ProgramDef& program, const std::string& input,
                          const std::string& output, const std::string& target = "",
                          const std::string& loss = "");

// The exercise's reference program, built when a rule first needs it (it may be read from a
// file); throws what loading it throws.
using Reference = std::function<const ProgramDef&()>;

// `params`: the inputs the step updates, each an output of the same name.
StructuralRule mean_gradient_update(const ProgramDef& program, Reference reference,
                                    std::vector<std::string> params, const std::string& axis);

}  // namespace meshrun::interp
