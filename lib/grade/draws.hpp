// The runs of the checks by values (docs/grading.md): the numbers they draw, and the decisions
// they take. A program may decide on the values -- a lax.cond's branch, a while loop's trip
// count, a mask, an index, a 0/1 factor computed from comparisons -- and decide otherwise on
// random numbers than on the case: the checks would then judge what it does not do on the case,
// and a program that tests whether its inputs look like a case's (decimals of two places) could
// do the forbidden work there alone. So every run of a check takes the case's decisions: the case
// runs once with every discrete value its primitives compute recorded, per device in order --
// the values of a bool or integer dtype, and floor, ceil, round and sign -- and the runs on drawn
// numbers take those values in their place; what they compute from the drawn floats is theirs.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "interp/primitives.hpp"
#include "interp/value.hpp"
#include "interp/program.hpp"
#include "tensor/tensor.hpp"

namespace meshrun::interp {

// The discrete values a run computed, per device (index device + 1; 0: outside every shard_map),
// in the order it computed them (at most 2^24 numbers a device: past that the runs take their
// own).
struct RunPath {
  std::vector<std::vector<Value>> values;
  // A hash of them all (the caches of the checks by values are keyed by it).
  std::uint64_t hash() const;
};

// Runs `lp` observed by `observer` (null: by nothing), taking the discrete values of `follow` where
// it is given (where it runs out, or a value's type differs: the run's own), and recording the
// run's own into `record` where given. Throws what run_observed throws.
// Returns the run's outputs.
std::vector<Tensor> run_following(const LoadedProgram& lp, const MeshShape& mesh,
                                  const std::vector<TensorRef>& inputs, ValueObserver* observer,
                                  const RunPath* follow, RunPath* record = nullptr);

// A random float32 in +-[0.5, 2) other than `old`: what the draws draw.
float redrawn(float old, std::mt19937_64& rng);

}  // namespace meshrun::interp
