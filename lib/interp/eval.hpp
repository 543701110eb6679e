// The evaluator: a jaxpr's equations in order on values, as JAX's eval_jaxpr runs them --
// jit and custom_jvp_call/custom_vjp_call inlined (their primal), shard_map handed to the caller
// (who runs its body on every device of a Mesh), every other equation to its primitive
// (primitives.hpp). A value's buffer is released after its last use, and an operand at its last
// use lends its buffer to the result. Two of XLA's rewrites that change no bit run here too:
// a run of elementwise equations over a large array is one chunked loop (fusion.hpp), and
// consecutive psums over the same axes are one psum of several operands (its small operands
// share one collective; one of 16Ki floats or more is reduced in place on its own).
//
// The evaluator runs a program compiled once at load (compiled.hpp): each equation's primitive,
// plans and lent operands found then, not per call. Before a run, bind() picks the export for the
// run's mesh and binds its dimension variables to the case's shapes, and check_export() infers
// every equation's types, so a file whose equations do not fit their primitives is refused (exit 2)
// before any device starts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "interp/cost.hpp"
#include "interp/ir.hpp"
#include "interp/primitives.hpp"
#include "interp/value.hpp"
#include "shard/mesh_shape.hpp"
#include "shard/partition_spec.hpp"

namespace meshrun::interp {

struct CompiledExport;
struct CompiledJaxpr;
struct CompiledShardMap;

// Bounds on memory, checked on the inferred types before a run (check_export).
inline constexpr std::uint64_t kMaxValueElements = std::uint64_t{1} << 28;
inline constexpr std::uint64_t kMaxRunElements = std::uint64_t{1} << 32;

struct Binding {
  const Export* exp = nullptr;
  DimBindings dims;
};

// The first export whose mesh is `mesh` and whose input types bind to `shapes` (the program's
// inputs, in order). InputError (without the file: the caller adds it) when none does: "no
// export for Mesh('data': 4) (the file has Mesh('data': 8))", or the first binding's complaint,
// named by input ("input.x: 8 does not evenly divide 12, the size of dimension 0 (8*M)").
Binding bind(const ProgramFile& file, const MeshShape& mesh, const std::vector<Shape>& shapes,
             const std::vector<DType>& dtypes);

// Infers the type of every equation of the bound export (shard_map bodies on their blocks) and
// compares it with the declared one, and bounds memory (kMaxValueElements, kMaxRunElements) and
// compute (`budget`); InputError naming the equation otherwise. Returns the
// floating-point operations of its products (dot_general: 2 per multiply-add, over every device
// of a body), what --timings divides by the time. `compiled` is binding.exp compiled
// (compiled.hpp); the overload without it compiles it first.
std::uint64_t check_export(const CompiledExport& compiled, const Binding& binding,
                           const CostBudget& budget = {});
std::uint64_t check_export(const ProgramFile& file, const Binding& binding,
                           const CostBudget& budget = {});

// A shard_map's in/out specs, read from its equation's params (compile_program reads them once).
std::vector<PartitionSpec> shard_map_specs(const Eqn& eqn, const char* key);

// Runs a shard_map: its operands (global values) in, its results (global) out.
using ShardMapRunner =
    std::function<std::vector<Value>(const CompiledShardMap& sm, std::vector<Value>& in)>;

// Evaluates `jaxpr` on `args` (moved in). Inside a shard_map body ctx.device is the device;
// outside, `shard_map` runs the shard_map equations (none: a shard_map is refused).
std::vector<Value> eval_jaxpr(const CompiledJaxpr& jaxpr, std::vector<Value> args, PrimContext& ctx,
                              const ShardMapRunner* shard_map = nullptr);
// A bare jaxpr (no shard_map), compiled for this one call: for tests.
std::vector<Value> eval_jaxpr(const Jaxpr& jaxpr, std::vector<Value> args, PrimContext& ctx);

}  // namespace meshrun::interp
