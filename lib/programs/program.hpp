// A program: what a user would pass to jax.shard_map -- a per-device body, the in/out partition
// specs over named mesh axes -- plus the names and symbolic shapes of its inputs and outputs,
// so the case reader can validate a case and the writer can print the result dict in order.
// Adding a program is one new file that defines a ProgramDef and registers it in registry.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mesh/shard_map.hpp"
#include "shard/mesh_shape.hpp"
#include "support/errors.hpp"
#include "trace/structure.hpp"

namespace meshrun {

struct ProgramDef;

// What a program computes: its one hook. A built-in program is one shard_map of its inputs
// (one_shard_map); a program file (lib/interp) may compute on the global arrays around its
// shard_maps, as jit does. Either way the program hands each shard_map to the engine it runs on
// (mesh/shard_map.hpp: this process's devices, or an MPI job's ranks), which calls nothing back.
// `program` is the ProgramDef the computation belongs to: what it declares (a built-in's specs
// are its inputs' and outputs') is read from there, never held twice.
class Computation {
 public:
  virtual ~Computation() = default;
  // Checks on the run's mesh and the case's inputs before anything runs (a program file checks
  // its equations against them, InputError naming the file). None by default.
  virtual void check(const MeshShape& mesh, const std::vector<TensorRef>& inputs) const;
  // The run on the global inputs: each shard_map it reaches goes to `engine`. Returns the outputs.
  virtual std::vector<Tensor> run(Engine& engine, const ProgramDef& program,
                                  const std::vector<TensorRef>& inputs) const = 0;
  // The call a run handed its engine under `key` (ShardMapCall::key), built where the program is
  // not evaluated: an MPI rank other than 0 runs only its devices' share of the shard_map.
  virtual ShardMapCall call(const ProgramDef& program, const std::string& key) const = 0;
  // How many shard_maps a run may reach (each may be called many times, in a loop): under
  // mpirun, a program of none runs on rank 0 alone, on any number of ranks.
  virtual int shard_maps() const { return 1; }
};

// The computation of a program that is one shard_map of its inputs: `body`, under the specs of
// the program's inputs and outputs.
std::shared_ptr<const Computation> one_shard_map(Body body);
// The body of a built-in program (one_shard_map's); InternalError for any other computation.
const Body& body_of(const ProgramDef& program);

struct ProgramDef {
  std::string name;  // the subcommand, e.g. "dp-step"
  std::string axis;  // a one-axis program's axis, e.g. "data" (what --devices sizes); "" otherwise
  std::string summary;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  // What it computes (above). A built-in program's is one_shard_map(body).
  std::shared_ptr<const Computation> computation;
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
};

// The mesh a run uses: the flags override the case, the case the program's default. `flag_mesh`
// (--mesh) if given, else {axis: flag_devices} when flag_devices > 0 (--devices, one-axis
// programs only), else `case_mesh` (the case's "mesh" key) if given, else the program's default.
// Throws InputError ("--devices") for --devices on a multi-axis program or beside --mesh.
MeshShape run_mesh(const ProgramDef& program, const MeshShape& flag_mesh,
                   const MeshShape& case_mesh, int flag_devices);

// The program's run on `engine` (its computation's; the checks are the caller's): a user
// program's ReplicationError becomes its InputError (replication_input_error).
std::vector<Tensor> run_program(Engine& engine, const ProgramDef& program,
                                const std::vector<TensorRef>& inputs);

// The program on `mesh`'s devices: its computation's checks, then run_program on an
// InProcessEngine, recording the run and the program's name in `trace`.
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
