// Issue #49: int32 literals of 2^25 or more in magnitude, held rounded (rounded_int32.cpp).
#pragma once

#include <span>
#include <string>

#include "interp/ir.hpp"
#include "interp/value.hpp"

namespace meshrun::interp {

// A literal (or a const's element) of int32 meshrun takes though float32 cannot hold it: an
// integer of int32's range with |v| >= 2^25 (2^31 - 1, -2^31: jax.random.randint's clip,
// jnp.iinfo(jnp.int32) as a sentinel).
bool rounded_int32_literal(double v);

// Before a primitive runs: throws PrimitiveError when an int32 operand holds such a value and
// the primitive would compute on its rounding (rounded_int32.cpp says which take it).
void check_rounded_int32(const Eqn& eqn, std::span<Value* const> ops);

// A program's output: why it cannot be returned when it is an int32 holding such a value (one
// line, `what` naming the output), else "".
std::string rounded_int32_output(const Value& v, const std::string& what);

}  // namespace meshrun::interp
