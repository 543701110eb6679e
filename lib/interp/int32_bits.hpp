// Issues #47 and #49: an int32 beyond 2^24 made by bitcast_convert_type (a float's bits as int32:
// jnp.signbit, jnp.frexp, jnp.ldexp), held as its 32 bits (int32_bits.cpp).
#pragma once

#include <span>
#include <vector>

#include "interp/ir.hpp"
#include "interp/primitives.hpp"
#include "interp/value.hpp"

namespace meshrun::interp {

// Whether an operand is an int32 held as its bits (Value::bits32).
bool holds_int32_bits(std::span<Value* const> ops);

// Whether `eqn`'s primitive is one of those int32_bits.cpp lists, which compute on the bits.
bool runs_on_int32_bits(const Eqn& eqn);

// Whether `eqn` runs on the bits: it runs_on_int32_bits, and an operand is held so or (the
// bitwise ops, shifts, add, sub, mul) is an int32 literal beyond 2^24 (frexp's
// `or(m, 1056964608)`, a hash's multiplier), which the bits take exactly.
bool wants_int32_bits(const Eqn& eqn, std::span<Value* const> ops);

// `eqn` run on the bits (wants_int32_bits). Each int32 result is held as bits only when an
// element is beyond 2^24, else as int32's values again.
std::vector<Value> eval_on_int32_bits(const Eqn& eqn, std::span<Value* const> ops,
                                      PrimContext& ctx);

// `v` as int32's values, for what does not take the bits (another primitive, a loop's or a
// shard_map's operand, a jaxpr's result): each element its value, held rounded beyond 2^25 as a
// literal is (rounded_int32.hpp, which then says what may take it); PrimitiveError naming `where`
// for an element between 2^24 and 2^25, which float32 cannot tell from an exact int32.
Value int32_as_rounded(const Value& v, const std::string& where);

// A literal operand handed to a call: an int32 beyond 2^24 as its exact bits, else `held`.
Value int32_literal(const Atom& a, Value held);

// An int32 result of 32 bits `u` per element (a bitcast's): held as values when every element
// is within 2^24, else as bits.
Value int32_from_bits(Value bits_as_u32);

}  // namespace meshrun::interp
