// FMA contraction, as XLA:CPU compiles an elementwise fusion (LLVM with FP-op fusion allowed):
// `a + b*c`, `b*c + a` and `a - b*c` become one fused multiply-add when the product feeds nothing
// else -- one rounding instead of two. JAX users see those bits (the SGD update w - lr*g is one
// FMA in jit's code); the interpreter follows it where the shapes are those of a loop fusion:
// the product and the other addend of the result's shape, or scalars.
#pragma once

#include <vector>

#include "interp/ir.hpp"
#include "interp/value.hpp"

namespace meshrun::interp {

struct Contraction {
  int mul = -1;                 // the equation of the product
  int addend = -1;              // which operand of the add/sub is the other addend (0 or 1)
  bool negate_product = false;  // a - b*c
  bool negate_addend = false;   // b*c - a
  bool operator==(const Contraction&) const = default;
};

// Per equation of `jx`: for an add or sub that absorbs a product, how; `absorbed[m]` is true for
// the mul equations absorbed (they are not run on their own).
struct ContractionPlan {
  std::vector<Contraction> at;
  std::vector<char> absorbed;
  // Per equation: for a transpose [1, 0] of a 2-D dot_general's result (no batch axes, used only
  // there), the dot's equation, which it runs with its operands swapped -- (l . r)^T = r . l,
  // each element the same FMA chain (fma(x, y, acc) = fma(y, x, acc)) -- instead of the product
  // and then a transposed copy of it (mlp-train's dW1 and dW2); -1 elsewhere.
  std::vector<int> swapped_dot;
  bool operator==(const ContractionPlan&) const = default;
};
// The dot_general `dot` with its operands and dimension numbers swapped, defining `into`'s results.
Eqn swapped_dot_eqn(const Eqn& dot, const Eqn& into);
ContractionPlan plan_contractions(const Jaxpr& jx);

// out = fma(+-b, c, +-a), elementwise; each of a, b, c has the result's shape or is a scalar.
// Reuses a's buffer when `own_a`.
Value fused_multiply_add(Value* a, bool own_a, const Value& b, const Value& c, bool negate_product,
                         bool negate_addend);

}  // namespace meshrun::interp
