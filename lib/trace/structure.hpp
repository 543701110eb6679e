// Structural rules: what the exercises' original graders check about the traced program, checked
// here against the Trace of what actually ran (never against what the program claims):
//   input_split   -- every device received the block of its split, never the whole array;
//   reduced_over  -- every device reduced (psum/pmean) over the axis (alone or in a tuple of
//                    axes: a pmean over (data, model) reduces over data too), at least as many
//                    elements as its blocks of the named outputs hold (the gradients, the partial
//                    outputs);
//   combined_over -- the same lower bound, counting every collective over the axis (a
//                    psum_scatter and all_gather, a ring of ppermutes are all-reduces too);
//   reduced_exactly_over -- exactly so many elements, over that axis alone ("over 'data' only");
//   only_reductions_over -- every collective was a psum/pmean over one of the axes alone (nothing
//                    gathered, nothing reduced over a tuple or another axis);
//   output_split  -- an output stayed split: each device returned only its block;
//   output_replicated -- every device returned the whole output.
//   replicas_agree -- no shard_map returned a replicated value whose copies differ.
// The blocks expected come from the rule (dimension, axis) and the recorded mesh -- never from the
// spec the program declared, which a wrong program may have changed.
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

// How many elements device `device` must reduce, read from the trace.
using ElementCount = std::function<std::size_t(const Trace&, int device)>;

// Split along `dim` over mesh axis `axis` ("": over all the mesh's devices, for one-axis programs).
StructuralRule input_split(const std::string& input, int dim, const std::string& axis = "");
StructuralRule reduced_over(const std::string& axis, std::vector<std::string> outputs);
// Every device passed at least as many elements as its blocks of `outputs` (those the trace
// recorded: a program may compute one around its shard_map), and at least one, to
// collectives over `axis` (alone or in a tuple), of any kind: values were combined across the
// devices of the axis, whether by psum or by an all-reduce of the program's own.
// Holds at once on an axis of one device.
StructuralRule combined_over(const std::string& axis, std::vector<std::string> outputs);
// `what` names the elements in the description, e.g. "the partial outputs".
StructuralRule reduced_exactly_over(const std::string& axis, const std::string& what,
                                    ElementCount need);
StructuralRule only_reductions_over(std::vector<std::string> axes, const std::string& why);
StructuralRule output_split(const std::string& output, int dim, const std::string& axis = "");
StructuralRule output_replicated(const std::string& output);
// Every value any shard_map call of the run returned under a spec that replicates it agrees
// across its replicas (Trace::replicas_differ), whatever the program did with it after.
StructuralRule replicas_agree();
// The elements of device `device`'s blocks of `arrays` (outputs) -- a need for the rules above. A
// partial shard_map's block (whole over the axes it is not manual over) counts its share, divided
// by those axes' devices (rounded up).
ElementCount output_blocks(std::vector<std::string> arrays);

struct StructuralVerdict {
  std::vector<std::string> passed;    // descriptions of the rules that held
  std::vector<std::string> failures;  // "<description>: <what broke it>"
  bool ok() const { return failures.empty(); }
};

StructuralVerdict check_structure(const std::vector<StructuralRule>& rules, const Trace& trace);
// The same with the run's values at hand (Trace::input_values, output_values): what grading
// uses, so the rules that are facts about values (lib/grade/semantic_rules.hpp) can check them.
StructuralVerdict check_structure(const std::vector<StructuralRule>& rules, const Trace& trace,
                                  const std::vector<TensorRef>& inputs,
                                  const std::vector<Tensor>& outputs);

}  // namespace meshrun
