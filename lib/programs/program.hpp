// A program: what a user would pass to jax.shard_map -- a per-device body, the in/out partition
// specs over named mesh axes -- plus the names and symbolic shapes of its inputs and outputs,
// so the case reader can validate a case and the writer can print the result dict in order.
// Adding a program is one new file that defines a ProgramDef and registers it in registry.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mesh/shard_map.hpp"
#include "shard/mesh_shape.hpp"
#include "support/errors.hpp"
#include "trace/structure.hpp"

namespace meshrun {

struct ProgramDef {
  std::string name;  // the subcommand, e.g. "dp-step"
  std::string axis;  // a one-axis program's axis, e.g. "data" (what --devices sizes); "" otherwise
  std::string summary;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  Body body;
  // Checks on input values beyond shapes (e.g. lr finite and > 0); throws InputError naming the
  // field as "input.<name>". May be empty.
  std::function<void(const std::vector<TensorRef>& inputs)> check_values;
  // What the exercise's grader checks about the program's structure, checked against the trace.
  std::vector<StructuralRule> structure;
  // The mesh it runs on unless told otherwise (the case's "mesh", --mesh, --devices).
  MeshShape mesh;
  // Floating-point operations of one run on these (global) inputs: its multiply-adds x 2, as
  // ../shared/peers/programs_numpy.py counts them, so --timings' gflops compare with numpy's.
  std::function<std::uint64_t(const std::vector<TensorRef>& inputs)> flops;
  // Read from a user's file (lib/interp): a ReplicationError of its run is the file's error,
  // InputError naming `summary`'s file ("a value that differs per device leaves the shard_map
  // with a spec that replicates it"), exit 2 -- not meshrun's (exit 4).
  bool user_program = false;
  // A program read from a program file (lib/interp) checks its equations against the run's mesh
  // and the case's shapes before anything runs (InputError naming the file). May be empty.
  std::function<void(const MeshShape& mesh, const std::vector<TensorRef>& inputs)> check_run;
  // Set instead of `body` by a program that computes outside its shard_map (equations on the
  // global arrays, as jit computes them): the whole run on `mesh`, recording into `trace`.
  std::function<std::vector<Tensor>(Mesh& mesh, const std::vector<TensorRef>& inputs, Trace* trace)>
      run;
  // The same run with its shard_maps handed to `run_shard_map` (the MPI backend runs them over
  // the job's ranks): each is a ShardMapCall and its global operands. `key` names the call the
  // same way on every rank, and `call_of(key)` builds it where the evaluation does not run (MPI
  // ranks other than 0). `shard_maps`: the most shard_maps one run reaches (MPI runs one).
  struct ShardMapCall {
    std::string key;
    Body body;
    std::vector<ArgDef> in, out;
  };
  using RunShardMap =
      std::function<std::vector<Tensor>(const ShardMapCall& call, std::vector<Tensor>& global)>;
  std::function<std::vector<Tensor>(const MeshShape& mesh, const std::vector<TensorRef>& inputs,
                                    const RunShardMap& run)>
      run_with;
  std::function<ShardMapCall(const std::string& key)> call_of;
  int shard_maps = 0;
};

// The mesh a run uses: the flags override the case, the case the program's default. `flag_mesh`
// (--mesh) if given, else {axis: flag_devices} when flag_devices > 0 (--devices, one-axis
// programs only), else `case_mesh` (the case's "mesh" key) if given, else the program's default.
// Throws InputError ("--devices") for --devices on a multi-axis program or beside --mesh.
MeshShape run_mesh(const ProgramDef& program, const MeshShape& flag_mesh,
                   const MeshShape& case_mesh, int flag_devices);

// shard_map of the program's body and specs (mesh/shard_map.hpp), recording its name in `trace`.
std::vector<Tensor> shard_map(Mesh& mesh, const ProgramDef& program,
                              const std::vector<Tensor>& inputs, Trace* trace = nullptr);
std::vector<Tensor> shard_map(Mesh& mesh, const ProgramDef& program,
                              const std::vector<TensorRef>& inputs, Trace* trace = nullptr);

// The InputError a user program's ReplicationError becomes (see ProgramDef::user_program).
InputError replication_input_error(const ProgramDef& program, const ReplicationError& e);

// For check_values: the learning rate `lr` (a scalar input) must be finite and > 0; throws
// InputError naming "input.lr".
void check_learning_rate(const TensorRef& lr);

// All programs, in the order `meshrun --help` lists them.
const std::vector<const ProgramDef*>& all_programs();
// nullptr when there is no program of that name.
const ProgramDef* find_program(const std::string& name);

}  // namespace meshrun
