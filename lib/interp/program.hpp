// A program file as a ProgramDef: what `meshrun run PROG.json CASE` and `meshrun check
// --program` hand the same runner the built-in programs use -- the case reader, every flag, the
// trace, the grading, the MPI backend.
//
// Its computation (ProgramDef::computation, program_run.cpp): a program whose top level is only
// jit around one shard_map of its inputs (what `jax.jit(jax.shard_map(f, ...))` exports) is one
// shard_map, like a built-in program. One with equations outside its shard_map evaluates them on
// the global arrays and hands each shard_map to the engine: under mpirun on rank 0, its one
// shard_map over the ranks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "interp/compiled.hpp"
#include "interp/eval.hpp"
#include "interp/ir.hpp"
#include "programs/program.hpp"
#include "trace/structure.hpp"

namespace meshrun::interp {

struct LoadedProgram;

// What grading (lib/grade/, the layer above) makes of an exercise, as the interpreter sees it: what
// a program graded as it must be -- its inputs and outputs, their dtypes, its mesh and values
// check -- and the rules it is graded by. The interpreter knows no exercise file.
struct Graded {
  std::string name;
  ProgramDef def;  // name, summary, inputs and outputs (names, symbolic dims, specs), mesh, ...
  std::vector<DType> input_dtypes, output_dtypes;
  // The rules of a program graded so, in order; they refer to the LoadedProgram: keep it alive.
  std::function<std::vector<StructuralRule>(const LoadedProgram&)> rules_for;
  virtual ~Graded() = default;
};

struct LoadedProgram {
  ProgramFile file;
  // The exercise it is graded as (the file's "exercise" or --exercise), or none.
  std::shared_ptr<const Graded> exercise;
  ProgramDef def;      // its functions refer to `file`: keep the LoadedProgram alive while it runs
  bool plain = false;  // jit(shard_map(inputs)) only: body and specs
  // The program's inputs are the file's, or -- for a file that names an exercise -- the
  // exercise's (a case for dp-step holds x even when the program closes over it: the rules then
  // say so). def_input[i]: the def's input that is the file's input i.
  std::vector<std::size_t> def_input;
  // The file compiled once (compiled.hpp): what every run evaluates. Its shard_maps' operands
  // and results are named after the program inputs and outputs they are (the trace's names).
  CompiledProgram compiled;
  // A plain program's binding, made by the first device of a run and shared by the others.
  struct BindCache {
    std::mutex mutex;
    MeshShape mesh;
    std::vector<Shape> shapes;
    std::shared_ptr<const Binding> binding;
  };
  std::unique_ptr<BindCache> bind_cache = std::make_unique<BindCache>();
  // The flops the last checked run counts (its computation's check, before it runs): what
  // def.flops returns.
  std::uint64_t flops = 0;
  // The compute a run may take (--max-flops, --max-bytes-moved), checked before it runs.
  CostBudget budget;
};

// Builds `file`'s ProgramDef, graded as `exercise` (null: not graded; the file's "exercise" is
// then ignored); InputError naming the file. Grading's load_program (grade/load.hpp) reads a
// file and finds the exercise it names.
std::unique_ptr<LoadedProgram> build_program(ProgramFile file,
                                             std::shared_ptr<const Graded> exercise);

// Runs `lp` on `inputs` (the def's, as a run takes them) on a fresh in-process mesh of shape
// `mesh`, every equation on its own (no fusion), showing `observer` every value it computes on
// every device and outside the shard_maps (grading's "holds" by values), and recording the run
// into `trace` when given. Throws what a run throws.
std::vector<Tensor> run_observed(const LoadedProgram& lp, const MeshShape& mesh,
                                 const std::vector<TensorRef>& inputs, ValueObserver& observer,
                                 Trace* trace = nullptr);

// An exercise's reference program file, as a plain program (its "exercise" ignored, no rules).
std::unique_ptr<LoadedProgram> load_reference_program(const std::string& path);

}  // namespace meshrun::interp
