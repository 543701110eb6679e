// A program file compiled once, at load, for every run that follows: what the evaluator
// (eval.hpp) and the check before a run (check_export) would otherwise work out on each run from
// the file's text -- which primitive each equation is, its FMA contraction and loop-fusion plans,
// which operands it may take over, each shard_map's params parsed (mesh, specs, check_vma) and its
// operands and results named after the program's inputs and outputs. As JAX's eval_jaxpr binds
// `eqn.primitive` (an object, not a name) and XLA plans a computation once before running it.
//
// Nothing here depends on a case: the dimension sizes are bound per run (bind), and a fusion
// group's size is read from its operands when it runs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interp/contract.hpp"
#include "interp/ops/control_flow.hpp"
#include "interp/fusion.hpp"
#include "interp/ir.hpp"
#include "interp/primitives.hpp"
#include "mesh/shard_map.hpp"
#include "shard/mesh_shape.hpp"
#include "shard/partition_spec.hpp"

namespace meshrun::interp {

struct CompiledJaxpr;
struct CompiledShardMap;
struct ControlPlan;  // ops/control_flow.hpp

// One equation, as the evaluator runs it.
struct Step {
  enum class Kind : std::uint8_t {
    kPrimitive,  // `prim`
    kCall,       // jit, pjit, custom_jvp_call, custom_vjp_call: `callee` inlined
    kShardMap,   // `shard_map` (null inside a shard_map body, where one is refused)
    kAbsorbed,   // runs inside its consumer (a product in an FMA, a dot at its transpose)
    kControl,    // scan, while, cond: `control` runs its compiled `bodies` (ops/control_flow.hpp)
  } kind = Kind::kPrimitive;
  const Eqn* eqn = nullptr;  // what runs: the file's equation, or `rewritten`
  // Per operand of *eqn: lent to it (its last use, and not also another operand of it).
  std::unique_ptr<bool[]> owned;
  const Primitive* prim = nullptr;      // *eqn's
  const Primitive* declared = nullptr;  // the file's equation's (what check_export infers with)
  const CompiledJaxpr* callee = nullptr;
  const CompiledShardMap* shard_map = nullptr;
  // kControl: its params read once and its jaxprs compiled once (scan's body; while's cond, then
  // body; cond's branches in order).
  std::unique_ptr<const ControlPlan> control;
  // Inside a shard_map body, the psums [this, psums_end) run as `combined`, one psum of all
  // their operands (XLA's all-reduce combiner; collective_ops.cpp packs the small ones into one
  // collective); psums_end is this step + 1 when there is no such run.
  std::size_t psums_end = 0;
  std::unique_ptr<const Eqn> rewritten, combined;
  std::unique_ptr<bool[]> combined_owned;
};

struct CompiledJaxpr {
  const Jaxpr* jaxpr = nullptr;  // the file's: what check_export infers types on
  // What the evaluator runs, equation for equation the file's: `jaxpr` itself, or `renamed`
  // where an identity equation (pvary, pcast, stop_gradient, copy) had an operand used again
  // after it -- every later use reads the identity's result instead, so the identity is the
  // operand's last use and moves its value on rather than copying it (only where the
  // contraction plan stays the file's: the same bits). `renamed` holds no constants: they are
  // `jaxpr`'s.
  const Jaxpr* run = nullptr;
  std::unique_ptr<const Jaxpr> renamed;
  std::vector<Step> steps;  // per equation of `run`
  ContractionPlan contractions;
  FusionPlan fusion;  // its groups' sizes are the operands' at run time
  std::vector<std::unique_ptr<CompiledJaxpr>> subs;  // owns the callees and bodies
};

// A shard_map of an export, reached from its top level through calls.
struct CompiledShardMap {
  const Eqn* eqn = nullptr;
  std::size_t export_index = 0, index = 0;  // the index-th shard_map of the export, in order
  const CompiledJaxpr* body = nullptr;
  // Its params, read once; `mesh_error` / `param_error` say what was malformed (check_export
  // reports it at the equation, before any run, in the order it checks them).
  MeshShape mesh;
  std::string mesh_error;
  // params.manual_axes: the axes a partial shard_map (JAX's axis_names=) is manual over, in the
  // file's order; empty when absent (manual over every axis of `mesh`). check_export refuses the
  // ones `mesh` lacks and specs or collectives that name the others (the automatic axes).
  std::vector<std::string> manual_axes;
  std::vector<PartitionSpec> in_specs, out_specs;
  bool specs_read = false;  // both lists of specs were read
  bool check_vma = true;    // check_vma, or check_rep before JAX 0.7; true when absent
  std::string param_error;
  // The program input each operand is and the program output each result is (-1: none), and
  // the ArgDefs a ShardMapCall hands the engine, named so (for a program that is not plain).
  std::vector<int> operand_input, result_output;
  std::vector<ArgDef> in, out;
};

struct CompiledExport {
  const Export* exp = nullptr;
  std::unique_ptr<CompiledJaxpr> jaxpr;
  std::vector<std::unique_ptr<CompiledShardMap>> shard_maps;  // in evaluation order
  // The shard_maps inside a shard_map body (a nested partial one): run by each device on its
  // own blocks (eval.cpp), not calls of the engine, so not numbered among `shard_maps`.
  std::vector<std::unique_ptr<CompiledShardMap>> nested_shard_maps;
};

struct CompiledProgram {
  std::vector<CompiledExport> exports;  // per export of the file
  const CompiledExport& of(const Export* exp) const;
};

// Compiles every export of `file` (which must outlive the result). Never throws for a
// malformed param: check_export reports it.
CompiledProgram compile_program(const ProgramFile& file);
// One jaxpr alone (no shard_map runs from it): for tests that evaluate a bare jaxpr.
std::unique_ptr<CompiledJaxpr> compile_jaxpr(const Jaxpr& jx);

// How often the work compile_program does once was done, process-wide: a test shows that a run
// after load does none of it.
struct CompileCounters {
  std::atomic<std::uint64_t> spec_parses{0};        // shard_map_specs
  std::atomic<std::uint64_t> plans{0};              // a jaxpr's contraction + fusion plans
  std::atomic<std::uint64_t> primitive_lookups{0};  // find_primitive
};
CompileCounters& compile_counters();

}  // namespace meshrun::interp
