// Forward data flow over a program's jaxprs: which of the program's inputs (bit i: input i, up to
// 63) each value depends on, through calls, loops (to their fixpoint) and every branch, and what
// each shard_map is handed. The compiled program names a shard_map's operands after the inputs
// they are (program.cpp); grading's rules (lib/grade/rules.cpp) read what reaches the outputs and
// the bodies.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "interp/ir.hpp"
#include "programs/program.hpp"
#include "shard/partition_spec.hpp"

namespace meshrun::interp {

using InputMask = std::uint64_t;
// Bit 63: derived from a closed-over array (a constant of rank >= 1).
inline constexpr InputMask kConstantInput = InputMask{1} << 63;

// A shard_map's operand: what it depends on, its spec and its type in the body.
struct FlowOperand {
  InputMask depends = 0;
  PartitionSpec spec;
  std::string type;        // in the body (its block)
  std::string outer_type;  // as the shard_map receives it
  const Eqn* shard_map = nullptr;
  // The mesh axes its body is manual over that the code around it is not (its manual_axes, or
  // every axis of its mesh, less those of the shard_maps it is nested in): over an axis not
  // listed, the body sees the operand as the code around it does -- a partial shard_map's body
  // holds the automatic axes whole, and a nested one's operand is a block of the enclosing
  // body's already.
  std::vector<std::string> enters;
  bool enters_axis(const std::string& axis) const;
};

struct Flow {
  std::vector<FlowOperand> operands;        // of every shard_map
  std::vector<std::string> body_constants;  // arrays closed over inside a body: their types
  // When set: a shard_map's result that its out_specs do not split over this axis depends on no
  // input (its closed-over arrays still count). Its body, graded itself, made it of the blocks
  // it was handed over that axis and combined them there (a data-parallel step's gradients,
  // pmean'd in one shard_map and handed to a second for the update); a result left split over
  // the axis (a block of x passed through) keeps what it depends on.
  std::string combined_over;
  // While walking: the axes the shard_maps around the current jaxpr are manual over.
  std::vector<std::string> manual;
};

// The axes shard_map equation `e` is manual over: its manual_axes, else every axis of its mesh
// (none when its params are malformed: check_export refuses those before any rule runs).
std::vector<std::string> shard_map_manual_axes(const Eqn& e);

// "f32[8*N_blk,D]": a type as the file declares it.
std::string declared_type(const Type& t);

// What each outvar of `jx` depends on, given its invars' masks; `f` collects the shard_maps'
// operands and the arrays closed over inside a body (`in_body`).
std::vector<InputMask> flow(const Jaxpr& jx, const std::vector<InputMask>& in, Flow& f,
                            int depth = 0, bool in_body = false);

// For each shard_map equation of `exp` (any nesting), per operand: the program input it is --
// derived from that input alone, with its shape (x, or a copy or conversion of x) -- or -1.
// The trace names such an operand after the input, so the exercises' rules find it.
std::map<const Eqn*, std::vector<int>> shard_map_operand_inputs(const ProgramFile& file,
                                                                const Export& exp);

}  // namespace meshrun::interp
