// Structural rules: what the exercises' original graders check about the traced program, checked
// here against the Trace of what actually ran (never against what the program claims):
//   input_split   -- every device received the block of its split, never the whole array;
//   reduced_over  -- every device reduced (psum/pmean) over the axis, at least as many elements
//                    as the named outputs hold (the gradients, the partial outputs);
//   output_split  -- an output stayed split: each device returned only its block.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace meshrun {

struct StructuralRule {
  std::string description;  // e.g. "every device's x block is f32[N/n,D], never the full x"
  // nullopt when the trace satisfies the rule, else what broke it.
  std::function<std::optional<std::string>(const Trace&)> check;
};

StructuralRule input_split(const std::string& input, int dim);
StructuralRule reduced_over(const std::string& axis, std::vector<std::string> outputs);
StructuralRule output_split(const std::string& output, int dim);

struct StructuralVerdict {
  std::vector<std::string> passed;    // descriptions of the rules that held
  std::vector<std::string> failures;  // "<description>: <what broke it>"
  bool ok() const { return failures.empty(); }
};

StructuralVerdict check_structure(const std::vector<StructuralRule>& rules, const Trace& trace);

}  // namespace meshrun
