// A program: what a user would pass to jax.shard_map -- a per-device body, the in/out partition
// specs over named mesh axes -- plus the names and symbolic shapes of its inputs and outputs,
// so the case reader can validate a case and the writer can print the result dict in order.
// Adding a program is one new file that defines a ProgramDef and registers it in registry.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "shard/mesh_shape.hpp"
#include "shard/partition_spec.hpp"
#include "tensor/tensor.hpp"
#include "trace/structure.hpp"

namespace meshrun {

class Device;

// One input or output: its JSON key, its dimensions by symbolic name ({} for a scalar,
// {"N", "D"} for a matrix), and its partition spec over the program's mesh axes.
struct ArgDef {
  std::string name;
  std::vector<std::string> dims;
  PartitionSpec spec;
};

// Runs once per device on that device's blocks (in the order of ProgramDef::inputs) and returns
// its blocks of the outputs (in the order of ProgramDef::outputs).
using Body = std::function<std::vector<Tensor>(Device&, const std::vector<Tensor>& blocks)>;

struct ProgramDef {
  std::string name;  // the subcommand, e.g. "dp-step"
  std::string axis;  // a one-axis program's axis, e.g. "data" (what --devices sizes); "" otherwise
  std::string summary;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  Body body;
  // Checks on input values beyond shapes (e.g. lr finite and > 0); throws InputError naming the
  // field as "input.<name>". May be empty.
  std::function<void(const std::vector<Tensor>& inputs)> check_values;
  // What the exercise's grader checks about the program's structure, checked against the trace.
  std::vector<StructuralRule> structure;
  // The mesh it runs on unless told otherwise (the case's "mesh", --mesh, --devices).
  MeshShape mesh;
};

// The mesh a run uses: the flags override the case, the case the program's default. `flag_mesh`
// (--mesh) if given, else {axis: flag_devices} when flag_devices > 0 (--devices, one-axis
// programs only), else `case_mesh` (the case's "mesh" key) if given, else the program's default.
// Throws InputError ("--devices") for --devices on a multi-axis program or beside --mesh.
MeshShape run_mesh(const ProgramDef& program, const MeshShape& flag_mesh, const MeshShape& case_mesh,
                   int flag_devices);

// All programs, in the order `meshrun --help` lists them.
const std::vector<const ProgramDef*>& all_programs();
// nullptr when there is no program of that name.
const ProgramDef* find_program(const std::string& name);

}  // namespace meshrun
