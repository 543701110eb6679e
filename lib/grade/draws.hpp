// The runs of the checks by values (docs/grading.md): the numbers they draw, and the path they
// take. A program whose path depends on the values (a lax.cond's branch, a while loop's trip
// count) could take another path on random numbers than on the case: the checks would judge what
// it does not do there, and a program that tests whether its inputs look like a case's could
// hide what it does on them. So every run of a check follows the case's path: the case runs once
// with its choices recorded (every cond's branch, every while loop's go-on, per device, in
// order), and the runs on drawn numbers take those choices whatever their own values compute.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "interp/primitives.hpp"
#include "interp/program.hpp"
#include "tensor/tensor.hpp"

namespace meshrun::interp {

// A run's path where it depends on the values, per device (index device + 1; 0: outside every
// shard_map): each cond's branch and each while loop's go-on (1) or stop (0), in order.
struct RunPath {
  std::vector<std::vector<std::int64_t>> choices;
  bool empty() const;
};

// Runs `lp` observed by `observer` (null: by nothing), taking the choices of `follow` where it is
// given (where it runs out: the run's own), and recording the run's own into `record` where given.
// Throws what run_observed throws.
void run_following(const LoadedProgram& lp, const MeshShape& mesh,
                   const std::vector<TensorRef>& inputs, ValueObserver* observer,
                   const RunPath* follow, RunPath* record = nullptr);

// A random float32 in +-[0.5, 2) other than `old`: what the draws draw.
float redrawn(float old, std::mt19937_64& rng);

}  // namespace meshrun::interp
