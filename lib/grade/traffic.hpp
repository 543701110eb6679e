// How much a device learns of the other devices' blocks: the numbers it receives -- the results
// of collectives over more than one device, and the operands a shard_map hands it -- that change
// when every element of the graded inputs it was not handed is redrawn. A device that receives
// fewer such numbers than there are elements in another device's block cannot know that block,
// however the numbers mix it: a float32 number carries one float32 element's worth of bits at
// most, and the draws' elements carry full random fractions. Mixtures that no number-by-number
// check sees (a psum of each block times a column of a Hadamard matrix, blocks reflected and
// all_gathered) need that many.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <vector>

#include "grade/draws.hpp"
#include "interp/program.hpp"
#include "tensor/tensor.hpp"

namespace meshrun::interp {

struct TrafficInput {
  std::size_t def_input = 0;  // in the run's inputs
  std::size_t size = 0;
};

// Per device (in mesh order).
struct Traffic {
  std::vector<std::size_t> received;  // numbers received that depend on elements not handed
  std::vector<std::size_t> foreign;   // graded elements it was not handed
  std::vector<std::size_t> block;     // fewest graded elements another device was handed and
                                      // it was not (0: every other device was handed its own)
  // The first value (in the device's order) whose received numbers depend on them.
  std::vector<const Jaxpr*> jx;
  std::vector<const Eqn*> eqn;  // null: handed in by a shard_map (operand k)
  std::vector<std::size_t> k;
};

// Runs `lp` on `base` (the graded inputs' elements distinct random numbers), then once per device
// with every graded element it was not handed redrawn, every run taking the
// path `follow` (draws.hpp; null: its own). nullopt when a run fails.
std::optional<Traffic> received_from_others(const LoadedProgram& lp, const MeshShape& mesh,
                                            const std::vector<Tensor>& base,
                                            const std::vector<TrafficInput>& graded,
                                            const std::set<const Jaxpr*>& bodies,
                                            const RunPath* follow);

// How many numbers each device computes over the run (a value of equal numbers counts one);
// nullopt when the run fails.
std::optional<std::vector<std::size_t>> numbers_per_device(const LoadedProgram& lp,
                                                           const MeshShape& mesh,
                                                           const std::vector<Tensor>& inputs);

// A value that holds every other device's block apart (blocks held whole are held.cpp's): when
// the devices' blocks of the graded inputs do not overlap, the program runs again once per block
// with its elements redrawn, and a number that changes with one other device's block alone (and
// perhaps its own) is computed from that block. A value with, for every other device, as many
// such numbers as its block has elements holds all of the inputs in one value, each block
// encoded apart (blocks reflected and stacked): what a ring that only moves blocks and adds them
// at the end does. nullopt: none, or the blocks overlap, or a run failed.
struct ApartFinding {
  int device = -1;
  std::size_t blocks = 0;
  const Jaxpr* jx = nullptr;
  const Eqn* eqn = nullptr;  // null: handed in by a shard_map (operand k)
  std::size_t k = 0;
  bool every_device = false;
};
std::optional<ApartFinding> blocks_apart_in_one_value(const LoadedProgram& lp,
                                                      const MeshShape& mesh,
                                                      const std::vector<Tensor>& base,
                                                      const std::vector<TrafficInput>& graded,
                                                      const std::set<const Jaxpr*>& bodies,
                                                      const RunPath* follow);

}  // namespace meshrun::interp
