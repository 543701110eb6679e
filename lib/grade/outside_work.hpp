// The exercise's combining done outside the shard_maps, in pieces: halves of x's rows reduced
// outside and only added on the mesh, the partial outputs a shard_map returned split and summed
// outside after a decoy psum, quarters of a product computed outside and handed in as blocks.
// No one equation there holds a whole input (held.hpp's rule for the code outside), yet the code
// outside does what the exercise gives the mesh. This sees it by dependence on the devices'
// blocks: the program runs on random numbers, then once per block of the split inputs (per axis
// and device index along it: the elements that device is handed) with that block redrawn, and a
// number outside every shard_map depends on the blocks whose runs changed it. An equation outside
// that makes a number depend on blocks none of its operands' numbers depended on together has
// combined them: it does, on one device, work the mesh was given -- when the exercise's outputs
// named by the rule change with what it computed (a loss averaged outside from each device's loss
// is not the step). `p - lr * g` on a g the mesh combined combines nothing: g depends on every
// block p does.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "grade/draws.hpp"
#include "interp/program.hpp"
#include "trace/structure.hpp"

namespace meshrun::interp {

// Fails when an equation outside every shard_map combines blocks of the split float32 inputs
// (the exercise's specs say which: `specs` per input of the program's def) that none of its
// operands had combined, and one of `outputs` changes when its results change (one more run with
// them moved). `keep`: inputs not drawn (lr). Nothing is judged on a program that fails on the
// draws, or on a mesh of one device. The cases of a mesh and shapes share the runs.
StructuralRule not_combined_outside(const LoadedProgram& lp, std::vector<PartitionSpec> specs,
                                    std::vector<bool> keep, std::vector<std::string> outputs,
                                    std::shared_ptr<CaseMemo> memo);

}  // namespace meshrun::interp
