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
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "interp/primitives.hpp"
#include "interp/value.hpp"
#include "interp/program.hpp"
#include "shard/mesh_shape.hpp"
#include "shard/partition_spec.hpp"
#include "tensor/tensor.hpp"

namespace meshrun::interp {

// The discrete values a run computed, per device (index device + 1; 0: outside every shard_map),
// in the order it computed them (at most 2^24 numbers a device: past that the runs take their
// own).
struct RunPath {
  std::vector<std::vector<Value>> values;
  // A hash of them all (the caches of the checks by values are keyed by it): computed once, when
  // run_following has recorded them.
  std::uint64_t hash() const { return sealed ? digest : digest_of(); }
  std::uint64_t digest = 0;
  bool sealed = false;
  std::uint64_t digest_of() const;
};

// What every check by values of a program starts from on a case, computed once per program and
// case (the rules of a program share one; each rule asked it for itself, two runs a rule):
// the case's decisions, and whether a draw's own are other than those.
class CaseMemo {
 public:
  // The case's decisions for `key` (the mesh and every input's shape and values); `record`
  // runs the case the first time.
  RunPath path(const std::string& key, const std::function<void(RunPath&)>& record);
  // Whether the first draw for `key` (the case's key and the inputs drawn) decides otherwise
  // than the case; `compute` the first time.
  bool decides(const std::string& key, const std::function<bool()>& compute);

 private:
  std::mutex mutex_;
  std::map<std::string, RunPath> paths_;
  std::map<std::string, bool> decides_;
};

// Runs `lp` observed by `observer` (null: by nothing), taking the discrete values of `follow` where
// it is given (where it runs out, or a value's type differs: the run's own), and recording the
// run's own into `record` where given, and the run into `trace` where given. With `every_branch`
// (the checks of what devices hold, and the runs whose decisions they follow: both must run the
// same branches) every branch of a cond runs (ValueObserver::every_branch). Throws what
// run_observed throws. Returns the run's outputs.
std::vector<Tensor> run_following(const LoadedProgram& lp, const MeshShape& mesh,
                                  const std::vector<TensorRef>& inputs, ValueObserver* observer,
                                  const RunPath* follow, RunPath* record = nullptr,
                                  Trace* trace = nullptr, bool every_branch = true);

// What a case's checks by values are keyed by (their caches): the mesh, the decisions `path`
// takes (when given), every input's shape and the values of those not `drawn` -- the draws
// replace the others, so the cases of a mesh and shapes share the draws' runs.
std::string case_key(const MeshShape& mesh, const std::vector<TensorRef>& inputs,
                     const std::function<bool(std::size_t)>& drawn, const RunPath* path);

// The elements (flat, row-major) of an input of `shape` and `spec` that the devices at `index`
// along `axis` of `mesh` are handed: those whose coordinate on the dimension split over `axis`
// falls in that index's block (a dimension split over a tuple of axes: the axis's place in the
// tuple). Empty when no dimension is split over `axis`, or it does not divide evenly.
std::vector<std::size_t> block_elements(const Shape& shape, const PartitionSpec& spec,
                                        const MeshShape& mesh, const std::string& axis, int index);

// A random float32 in +-[0.5, 2) other than `old`: what the draws draw.
float redrawn(float old, std::mt19937_64& rng);

}  // namespace meshrun::interp
