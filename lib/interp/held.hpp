// No device holds a whole input: the per-device shapes of what a shard_map body holds, checked
// on the export the run bound (rules.hpp uses it for "no device holds a full weight matrix w1 or
// w2" and "no device holds a full x or y").
#pragma once

#include <string>
#include <vector>

#include "interp/program.hpp"
#include "trace/structure.hpp"

namespace meshrun::interp {

// Fails when some value of a shard_map body holds as many of an input's elements as the whole
// input (`names`: the inputs), on a mesh whose `axis` has more than one device, or when a product
// outside every body takes a whole one (the computation not split at all). What a value holds of
// an input: a copy, reshape, slice, broadcast or elementwise operation what its operands hold (a
// value mixing inputs holds each of them: `w1 + 0 * x[0, 0]` still holds w1), an all_gather (or a
// psum, which gathers blocks padded with zeros) over n devices n times more, a concatenation the
// sum, never more than its own size; a product or a reduction (dot_general, reduce_sum, ...) holds
// none, unless it is a product with an operand that depends on no input (a one-hot or permutation
// matrix from iota and axis_index moves elements as a gather does).
// `lp` must outlive the rule.
StructuralRule no_full_in_body(const LoadedProgram& lp, std::vector<std::string> names,
                               const std::string& axis, const std::string& description);

}  // namespace meshrun::interp
