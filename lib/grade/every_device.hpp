// An all-reduce ends with the sum on every device: ring-allreduce's out is every device's, not
// chunks a reduce-scatter left one per device and the code outside stitched together (sneaky10's
// "half an all-reduce": the out_spec splits the chunks, the program reshapes them into out, and
// no device ever holds the finished sum -- the trace records no shard_map result named out to
// check as replicated).
#pragma once

#include <string>

#include "interp/program.hpp"
#include "trace/structure.hpp"

namespace meshrun::interp {

// Fails unless every device computes, in some value of a shard_map body on the case, the whole
// output `output` as the program returns it: a run of its numbers (a padded buffer sliced
// outside holds it), each within 1e-5 (1 + |v|) of the returned one in order (a ring's sum in
// another order moves the last bits). Not judged when the run or the output cannot be read.
StructuralRule every_device_holds(const LoadedProgram& lp, const std::string& output);

}  // namespace meshrun::interp
