// Grading the user's program: the requirements of the exercise a program file names
// ("exercise": "dp-step", its rules listed in cases/exercises/dp-step/exercise.json), each checked
// as a fact about the program itself -- never about meshrun's own code, never as a pattern of how
// it is written (docs/grading.md lists them):
//   - on the file: every input the exercise has is an input of the program (not closed over as
//     a constant), lr reaches the outputs (not a literal baked in), no full x or y is handed to
//     the body;
//   - what each device holds: no value of the body holds a whole weight matrix (or a whole x or
//     y), whatever made it (held.hpp); the blocks each device received (the trace);
//   - what it computes, by running it again on changed inputs (semantic_rules.hpp): b2 counted
//     once in out, the update lr times the mean gradient and not a multiple of it;
//   - out replicated, hidden left split, values reduced across devices at all (the trace).
// Which of them an exercise asks, and of which inputs, is its file's (rule_kinds.hpp builds each
// kind from it); here are the rules checked on the program file and the data flow they share.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "grade/draws.hpp"
#include "interp/ir.hpp"
#include "programs/program.hpp"
#include "trace/structure.hpp"

namespace meshrun::interp {

struct LoadedProgram;

// The rules of the program's exercise (lp.exercise; none without one), in the order its file
// lists them -- the mistake itself before its consequences. Each rule's description names it.
// The rules refer to `lp` (its file, its def, its exercise): keep it alive. (rule_kinds.cpp)
std::vector<StructuralRule> exercise_rules(const LoadedProgram& lp);

// The rules checked on the file, as export `exp` holds the program (rule_kinds.cpp merges them
// over every export: the case may run any of them):
//   every input of the exercise is an input of the program, never closed over;
StructuralRule inputs_given_rule(const ProgramFile& file, const ProgramDef& exercise,
                                 const Export& exp);
//   `name` is traced: some output depends on the input `name`;
StructuralRule traced_rule(const ProgramFile& file, const Export& exp, const std::string& name);
//   no full `names` flows into the body: every shard_map operand derived from them is split
//   along `dim` over `axis`, no closed-over array reaches the body, the outputs depend on them.
// `rule` (the trace's input_split: the block each device was handed, by shape), then by values:
// what each device's shard_map operands hold of `input`, as received, is whole slices along
// `dim`, its share of them over `axis`, and no other device's along it (handed_slices) -- an
// input rolled by one block outside and handed again, or split along another dimension after a
// zero row made its shape another, is not its block.
StructuralRule split_by_values(StructuralRule rule, const LoadedProgram& lp,
                               const std::string& input, int dim, const std::string& axis,
                               std::shared_ptr<CaseMemo> memo = nullptr);

StructuralRule enters_split_rule(const LoadedProgram& lp, const Export& exp,
                                 const std::vector<std::string>& names, int dim,
                                 const std::string& axis, std::shared_ptr<CaseMemo> memo = nullptr);

// `rule` on the arrays the trace recorded under these names: a program computing around its
// shard_map (x concatenated with y before it, the loss's mean or b2 added after it) hands the
// body no array named x, returns none named out -- what the trace cannot say, the rules on what
// the body holds say. The rule holds when one of them was not recorded.
StructuralRule where_recorded(StructuralRule rule, std::vector<std::string> inputs,
                              std::vector<std::string> outputs);

}  // namespace meshrun::interp
