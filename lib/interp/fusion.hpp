// Loop fusion of elementwise chains, as XLA fuses them: a run of consecutive elementwise float32
// equations over large arrays is computed chunk by chunk (kFusionChunk elements at a time, every
// equation of the run on the chunk, in scratch buffers that stay in cache) and only the run's
// last result is written to memory -- instead of one pass over memory and one array per
// equation. For a chain of k equations over n elements that is one read of each outside operand
// and one write, where the unfused evaluator reads and writes n floats k times.
//
// What is fused (a "group"): consecutive equations, at least two of them computed (an FMA pair
// counts as one), each of a primitive with a fused kernel (Primitive::fused: add, add_any, sub,
// mul, div, max, min, pow, neg, abs, sign, exp, exp2, log, log1p, expm1, tanh, logistic, erf,
// erfc, sqrt, rsqrt, square, integer_pow) -- f32
// results all of one shape S of at least kFusionMinElements elements, each operand a group
// member's result, an outside f32 value of shape S, or an f32 scalar (rank 0 or a literal: no
// other broadcasting) -- whose results other than the last are used only inside the group (the
// last may be used anywhere). A mul that contract.hpp's plan absorbs into an add/sub stays that
// FMA inside the group (the pair is fused only when both are in it). The identities JAX puts in
// such chains (Primitive::identity: pvary/pcast of a literal under check_vma, stop_gradient,
// copy) -- of a scalar
// or of an S value may sit inside a group: they compute nothing there, their result names their
// operand.
//
// The bits are those of the unfused evaluator: every op calls the very function its primitive
// calls (scalar_ops.hpp), on the same operands, in the same order; only where the values live
// changes. The final result takes the buffer of an outside operand of shape S at its last use in
// the group, else a new array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "interp/contract.hpp"
#include "interp/dims.hpp"
#include "interp/ir.hpp"
#include "interp/primitives.hpp"
#include "interp/value.hpp"

namespace meshrun::interp {

inline constexpr std::size_t kFusionMinElements = std::size_t{1} << 16;  // 64Ki floats
inline constexpr std::size_t kFusionChunk = 1024;                        // 4 KB per scratch slot
inline constexpr std::size_t kFusionMaxEqns = 64;

// One operand of a fused op: a scratch slot (a member's result), an outside variable, or a
// scalar (a literal's value, or a rank-0 variable read at run time).
struct FusedOperand {
  enum Kind : std::uint8_t { kSlot, kOutside, kScalarVar, kLiteral } kind = kLiteral;
  int index = 0;  // the slot, or the variable
  float literal = 0;
};

struct FusedOp {
  // The primitive's kernel (Primitive::fused), or the FMA's: fma_contracted(kb, in[1], in[2], ka,
  // in[0]) -- in[0] the addend, in[1]*in[2] the product.
  FusedKernel kernel = nullptr;
  std::uint8_t arity = 0;  // the operands it reads
  bool fma = false;
  FusedOperand in[3];
  int out_slot = -1;           // -1: the group's result
  std::int64_t y = 0;          // the primitive's Primitive::fused_param (integer_pow's y)
  float kb = 1.0f, ka = 1.0f;  // the FMA's signs
};

// The FMA's kernel (fusion.cpp).
void fused_fma(const FusedOp& op, const FusedSrc* in, float* o, std::size_t c);

struct FusionGroup {
  std::size_t begin = 0, end = 0;  // the equations [begin, end)
  std::vector<FusedOp> ops;        // in order; the last one writes the result
  int slots = 0;                   // scratch slots needed (reused once their value is dead)
  int result_var = -1;
  // Outside variables of shape S whose last use is in the group: the result may take the first
  // one's buffer.
  std::vector<int> reusable;
};

// group_at[e] >= 0: a group begins at equation e (its index in groups).
struct FusionPlan {
  std::vector<int> group_at;
  std::vector<FusionGroup> groups;
};

// The groups of `jx` under `dims` (the run's bound dimensions; null: no group), given its FMA
// contraction plan. Groups below kFusionMinElements are not made.
FusionPlan plan_fusion(const Jaxpr& jx, const ContractionPlan& contractions,
                       const DimBindings* dims);
// The groups of `jx` under any dimensions, made once at load (compiled.hpp): a group is run when
// its outside operands have kFusionMinElements or more, as plan_fusion would have made it then
// (the members of a group share one shape, so the size decides the whole group).
FusionPlan plan_fusion_symbolic(const Jaxpr& jx, const ContractionPlan& contractions);

// Runs `group` on env (its outside operands there, its result stored there; the group's
// last-use variables are the caller's to release). False, doing nothing, when fusion is off or
// its outside operands hold fewer than kFusionMinElements (or differ in shape).
bool run_fusion_group(const FusionGroup& group, std::vector<Value>& env);

// Fusion on (the default) or off, for every thread: the tests compare the bits of both paths.
// Returns the previous setting.
bool set_fusion_enabled(bool on);
bool fusion_enabled();

}  // namespace meshrun::interp
