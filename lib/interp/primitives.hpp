// The primitives: for each, how its output types follow from its operands' types and its params
// (checked before anything runs, so a file whose equation does not fit its primitive is exit 2),
// and how it computes. The primitives that hold a jaxpr -- jit, pjit, custom_jvp_call,
// custom_vjp_call, shard_map -- have entries too, as in JAX, naming the param that holds it; the
// evaluator runs that jaxpr itself (compiled.hpp's kCall and kShardMap steps), so their `infer`
// and `eval` are null. docs/program-format.md lists them with their params.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "interp/ir.hpp"
#include "interp/value.hpp"
#include "shard/mesh_shape.hpp"

namespace meshrun {
class Device;
}

namespace meshrun::interp {

// What a primitive found wrong with its equation (operands, params); the evaluator adds the file
// and the equation's place and throws it as an InputError.
class PrimitiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Sees every value a run computes (run_observed, program.hpp: what grading's "holds" reads);
// set only for such a run, which then runs every equation on its own (no fusion), so that no
// intermediate value is skipped.
class ValueObserver {
 public:
  virtual ~ValueObserver() = default;
  // Result `k` of `eqn` in `jx` -- or, with `eqn` null, the k-th operand `jx` receives -- on
  // device `device` (-1: outside every shard_map). Called from the device's own thread.
  virtual void seen(int device, const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) = 0;
  // The results of primitive `eqn` as the device computed them, before they are seen or used:
  // the observer may replace them with values of the same types (a run that takes another run's
  // decisions: grading's draws take the case's). Called from the device's thread.
  virtual void pin(int device, const Eqn& eqn, std::vector<Value>& outs) {
    (void)device;
    (void)eqn;
    (void)outs;
  }
  // Whether the run judges every branch (grading's checks of what devices hold): a cond then runs
  // every branch in index order and keeps the taken one's results, and a while the case never
  // enters runs its body once, dropping what it computes (ops/control_flow.cpp).
  virtual bool every_branch() const { return false; }
};

// What a primitive sees besides its operands.
struct PrimContext {
  const DimBindings* dims = nullptr;  // binds the Dim expressions in params
  // Inside a shard_map body: the mesh's axes (the collectives' axis names and sizes); null
  // outside, where a collective is refused.
  const MeshShape* mesh = nullptr;
  // At run time: the enclosing shard_map's mesh as the program declares it, its axes perhaps in
  // another order than `mesh`'s (the run's). A ppermute over several axes numbers its members in
  // this order, as JAX does (it sorts each group's device ids); null: `mesh`'s order.
  const MeshShape* declared_mesh = nullptr;
  Device* device = nullptr;  // at run time inside a shard_map body; null when inferring
  std::string_view file;     // the program file, for the messages of errors at run time
  // The most iterations a `while` may run (CostBudget::max_while_iterations).
  std::uint64_t max_while_iterations = std::uint64_t{1} << 20;
  ValueObserver* observer = nullptr;  // run_observed's; null on every other run
  // Set by eval_jaxpr just before it runs an inlined call's jaxpr, whose results may then be
  // int32s held as bits (int32_bits.hpp); eval_jaxpr takes it at entry and clears it.
  bool bits_may_leave = false;
};

// Loop fusion (fusion.hpp): one operand of a fused op on one chunk -- a run of floats, or one
// float for every element -- and the kernel that computes the op on a chunk of `c` elements.
struct FusedSrc {
  const float* p = nullptr;
  float s = 0;
  bool scalar = false;
};
struct FusedOp;
using FusedKernel = void (*)(const FusedOp& op, const FusedSrc* in, float* o, std::size_t c);

// Everything meshrun knows of a primitive, in its one registry entry (prim_util.hpp's Entry, in
// the source that computes it): adding an elementwise primitive is that source and its test.
struct Primitive {
  // Output types; throws PrimitiveError.
  std::vector<ValueType> (*infer)(const Eqn& eqn, std::span<const ValueType> in,
                                  const PrimContext& ctx);
  // Output values. `in[i]` may be moved from (its storage reused for an output) when
  // `owned[i]` -- the operand's last use; otherwise it must be left as it is. Only called on
  // operands whose types passed `infer`.
  std::vector<Value> (*eval)(const Eqn& eqn, std::span<Value* const> in,
                             std::span<const bool> owned, PrimContext& ctx);
  // An f32 elementwise primitive that may sit in a fused chain: its kernel (calling the very
  // function `eval` calls, so the bits are the same) and its operands; null otherwise. A kernel
  // that reads an integer param names it (integer_pow's "y", held in FusedOp::y).
  FusedKernel fused = nullptr;
  std::uint8_t arity = 0;
  const char* fused_param = nullptr;
  // Its result is its operand's value (pvary, pcast, stop_gradient, copy): it computes nothing
  // inside a fused chain.
  bool identity = false;
  // The param holding the jaxpr it runs ("jaxpr", "call_jaxpr"), for jit, pjit, custom_jvp_call,
  // custom_vjp_call and shard_map, whose infer and eval are null; null for every other primitive.
  const char* holds_jaxpr = nullptr;
  bool shard_map = false;  // shard_map, the one holder that is not inlined as a call
  // Control flow (scan, while, cond): holders whose jaxprs the evaluator runs as a loop or a
  // branch (ops/control_flow.hpp), not inlined as a call. `holds_jaxpr2` names a second jaxpr
  // (while's body_jaxpr beside its cond_jaxpr); `jaxpr_list`: holds_jaxpr's param is a list of
  // jaxprs (cond's branches).
  enum class Control : std::uint8_t { kNone, kScan, kWhile, kCond } control = Control::kNone;
  const char* holds_jaxpr2 = nullptr;
  bool jaxpr_list = false;
  // Its operands cross between devices (the bytes a run moves, cost.hpp).
  bool collective = false;
  // An all-reduce (psum, pmean): each result depends on its own operand only (the rules' data
  // flow, rules.cpp).
  bool reduction = false;
  // The floating-point operations of one equation on one device, when they are not one per
  // element of its larger side (dot_general: 2 per multiply-add); saturating at 2^64.
  std::uint64_t (*flops)(const Eqn& eqn, std::span<const ValueType> ops,
                         std::span<const ValueType> outs) = nullptr;
};

// nullptr for a primitive meshrun does not have (the evaluator's own control flow included).
const Primitive* find_primitive(std::string_view name);
// The registry of `tables` (each source's entries): InternalError naming a primitive two entries
// register (the registry is built so, once, at the first lookup).
struct PrimitiveEntry {
  std::string_view name;
  Primitive prim;
};
std::map<std::string_view, Primitive, std::less<>> make_registry(
    std::initializer_list<std::span<const PrimitiveEntry>> tables);
// Every primitive find_primitive knows, sorted (for docs and tests).
std::vector<std::string> primitive_names();

// Params, read from eqn.params; each throws PrimitiveError naming the param when it is missing
// or of the wrong kind.
std::int64_t param_int(const Eqn& eqn, const char* key);
std::vector<std::int64_t> param_ints(const Eqn& eqn, const char* key);
bool param_bool(const Eqn& eqn, const char* key, bool fallback);
// A list of Dims (ints or expressions), evaluated under ctx.dims.
Shape param_shape(const Eqn& eqn, const char* key, const PrimContext& ctx);
// A list of positions (slice's start/limit/strides): integers of either sign up to 2^40 in
// magnitude, or expressions evaluated under ctx.dims (a symbolic export's `N_blk`).
std::vector<std::int64_t> param_indices(const Eqn& eqn, const char* key, const PrimContext& ctx);
// Axis names: a list of strings ("axes", "axis_name").
std::vector<std::string> param_axes(const Eqn& eqn, const char* key);
DType param_dtype(const Eqn& eqn, const char* key);

// Issue #49: the primitives that run on bf16 and f16 (kHalf) or on i8, u8, i16, u16 (kSmallInt),
// in one table (ops/narrow_dtypes.cpp). An equation of any other primitive with an operand or a
// result of these dtypes is refused before anything runs. `fit`: its results are computed in
// float32 as XLA:CPU's upcast computes them (or exactly, for the integers) and the evaluator
// brings each into its dtype after (DTypeInfo::fit).
struct NarrowSupport {
  // kU32: uint32 held as its bits (issue #49, jax.random): a primitive that computes on it runs
  // its uint32 kernel (u32_primitive, ops/uint32.cpp); one that moves values runs its own.
  enum : unsigned { kHalf = 1, kSmallInt = 2, kU32 = 4 };
  unsigned kinds = 0;
  bool fit = false;
  // What a convert_element_type to f32 of its bf16 result gets (an f16 one keeps its rounding,
  // as XLA:CPU's, whatever the primitive). kFolds: XLA:CPU folds the
  // pair of its own convert to bf16 and that convert, so the op's f32 result, unrounded (JAX
  // 0.10.2: (x - y).astype(f32) of bf16 is x - y in f32). kKeeps: the rounded result (psum).
  // kUnverified: such a convert is refused.
  enum class ToF32 : std::uint8_t { kUnverified, kFolds, kKeeps } to_f32 = ToF32::kUnverified;
};
// Sets each equation's narrow_use in `jx` (after mark_last_uses): a bf16 result of a kFolds
// primitive whose every use is a convert_element_type to float32 is kUnrounded; one used both so
// and otherwise, or of a kUnverified primitive, converted so, is kRefused.
void mark_narrow_uses(Jaxpr& jx);
// nullptr: the primitive takes none of them.
const NarrowSupport* narrow_dtype_support(std::string_view primitive);
// Issue #49, jax.random: the kernel of a primitive that computes on uint32's bits (add, shifts,
// compares, convert_element_type, bitcast_convert_type, iota, ...), which the compiler runs
// instead of the registry's for an equation with a uint32 operand or result; nullptr for the
// primitives that only move values (their own kernels copy the bits) and every other.
const Primitive* u32_primitive(std::string_view primitive);

// lax.platform_dependent's branch for `platform` ("cpu", "cuda", "rocm", "tpu"): the index of the
// first entry of a platform_index equation's `platforms` naming it, else of its default (null)
// entry; nullopt when neither (JAX would not lower it there). PrimitiveError for malformed params.
std::optional<std::size_t> platform_branch(const Eqn& eqn, std::string_view platform);

}  // namespace meshrun::interp
