// Issues #47 and #49: an int32 beyond 2^24 that bitcast_convert_type made from a float's bits.
// meshrun holds an int32 as its value in a float32 (value.hpp), exactly up to 2^24. A bitcast of
// a float to int32 gives 2^24 or more for every normal float (1.0f is 1065353216): jnp.signbit is
// `shift_right_arithmetic(bitcast(x), 31)`, jnp.frexp and jnp.ldexp mask and shift the exponent
// bits. Such a result is held as its 32 bits instead (Value::bits32, the slot as a uint32's), and
// the primitives below compute on the bits as JAX does; each int32 result whose elements all come
// back within 2^24 (the sign, the exponent) is held as values again.
//
// On the bits, with uint32's kernels (ops/uint32.cpp) where the signed meaning does not change the
// bits: add, sub, mul, neg, reduce_sum, reduce_prod (modulo 2^32), and, or, xor, not, the three
// shifts (shift_right_arithmetic shifts them as int32's already); signed: eq ne lt le gt ge, max,
// min, reduce_max, reduce_min, argmax, argmin (the sign bit flipped, an unsigned order); the moves
// (reshape, broadcast_in_dim, transpose, squeeze, expand_dims, slice, concatenate, rev, copy,
// stop_gradient, pvary, pcast, select_n's cases); convert_element_type to float32 (rounded to
// nearest, as XLA), bool, int32, uint32; bitcast_convert_type to float32, int32, uint32. The other
// int32 operands of such an equation are converted to their bits: a literal from the file's exact
// integer (frexp's mask -2139095041, which float32 does not hold), a value from its value (refused
// when it is a rounded literal beyond 2^24: rounded_int32.cpp). Every other primitive with such an
// operand is refused before it runs, one line, exit 2 -- division, reductions, collectives,
// indexing, control flow --, and so is such a value returned by a jaxpr (eval.cpp).
#include "interp/int32_bits.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "interp/prim_util.hpp"

namespace meshrun::interp {
namespace {

using U = std::uint32_t;
constexpr std::int64_t kExact = std::int64_t{1} << 24;

constexpr std::string_view kSignless[] = {"add",
                                          "sub",
                                          "mul",
                                          "and",
                                          "or",
                                          "xor",
                                          "not",
                                          "shift_left",
                                          "shift_right_logical",
                                          "shift_right_arithmetic",
                                          "reduce_sum",
                                          "reduce_prod"};
constexpr std::string_view kSigned[] = {"eq",         "ne",         "lt",     "le",
                                        "gt",         "ge",         "max",    "min",
                                        "reduce_max", "reduce_min", "argmax", "argmin"};
constexpr std::string_view kMoves[] = {"reshape",
                                       "broadcast_in_dim",
                                       "transpose",
                                       "squeeze",
                                       "expand_dims",
                                       "slice",
                                       "concatenate",
                                       "rev",
                                       "copy",
                                       "copy_p",
                                       "stop_gradient",
                                       "pvary",
                                       "pcast",
                                       "select_n",
                                       "reshard",
                                       "device_put",
                                       "sharding_constraint",
                                       "mesh_cast",
                                       "sharding_cast",
                                       "optimization_barrier",
                                       "name",
                                       "debug_print"};

template <std::size_t N>
bool among(const std::string_view (&set)[N], std::string_view p) {
  return std::find(std::begin(set), std::end(set), p) != std::end(set);
}

[[noreturn]] void refuse(const std::string& what) {
  prim::fail(what +
             ": an int32 beyond 2^24 held as its 32 bits (a float's bits from "
             "bitcast_convert_type, or arithmetic on a literal beyond 2^24), which meshrun "
             "computes on only with the bitwise ops, shifts, add, sub, mul, comparisons, max, "
             "min, their reductions, moves and conversions (docs/program-format.md, int32 "
             "bits)");
}

// Operand i of eqn as a uint32 of the same bits (an int32 one), or as it is.
Value as_u32(const Eqn& eqn, std::size_t i, const Value& v) {
  if (v.dtype != DType::kI32) return v;
  Value u = v;
  u.dtype = DType::kU32;
  if (v.bits32) {
    u.bits32 = false;
    return u;
  }
  const bool literal = i < eqn.in.size() && eqn.in[i].is_literal();
  for (float& x : u.t.data) {
    if (!literal && std::fabs(x) > float(kExact)) {
      refuse(eqn.primitive + " of an int32 held rounded (beyond 2^24) and");
    }
    const double exact = literal ? eqn.in[i].literal : double(x);
    x = u32_to_slot(static_cast<U>(static_cast<std::int32_t>(exact)));
  }
  return u;
}

Value relabel(Value v, DType t) {
  v.dtype = t;
  v.bits32 = false;
  return v;
}

void flip_sign(Value& v) {
  for (float& x : v.t.data) x = u32_to_slot(slot_to_u32(x) ^ 0x80000000u);
}

std::vector<Value> run(const Primitive* p, const Eqn& eqn, std::vector<Value>& in,
                       PrimContext& ctx) {
  std::vector<Value*> ptrs;
  const std::unique_ptr<bool[]> owned(new bool[in.size() + 1]);
  for (std::size_t i = 0; i < in.size(); ++i) {
    ptrs.push_back(&in[i]);
    owned[i] = true;  // copies of the operands, this function's own
  }
  return p->eval(eqn, ptrs, std::span<const bool>(owned.get(), in.size()), ctx);
}

}  // namespace

bool holds_int32_bits(std::span<Value* const> ops) {
  return std::any_of(ops.begin(), ops.end(), [](const Value* v) { return v->bits32; });
}

bool runs_on_int32_bits(const Eqn& eqn) {
  const std::string& p = eqn.primitive;
  if (p == "convert_element_type" || p == "bitcast_convert_type") {
    const DType to = param_dtype(eqn, "new_dtype");
    return to == DType::kI32 || to == DType::kU32 || to == DType::kF32 ||
           (to == DType::kBool && p == "convert_element_type");
  }
  return p == "neg" || among(kSignless, p) || among(kSigned, p) || among(kMoves, p);
}

bool wants_int32_bits(const Eqn& eqn, std::span<Value* const> ops) {
  if (!runs_on_int32_bits(eqn)) return false;
  if (holds_int32_bits(ops)) return true;
  if (!among(kSignless, eqn.primitive)) return false;
  return std::any_of(eqn.in.begin(), eqn.in.end(), [](const Atom& a) {
    return a.is_literal() && a.dtype == DType::kI32 && std::fabs(a.literal) > double(kExact);
  });
}

Value int32_literal(const Atom& a, Value held) {
  if (a.dtype != DType::kI32 || std::fabs(a.literal) <= double(kExact)) return held;
  Value v(DType::kU32,
          Tensor::scalar(u32_to_slot(static_cast<U>(static_cast<std::int32_t>(a.literal)))));
  return int32_from_bits(std::move(v));
}

Value int32_as_rounded(const Value& v, const std::string& where) {
  if (!v.bits32) return v;
  Value r = v;
  r.bits32 = false;
  for (float& x : r.t.data) {
    const std::int32_t s = static_cast<std::int32_t>(slot_to_u32(x));
    if (std::abs(std::int64_t{s}) > kExact && std::abs(std::int64_t{s}) < 2 * kExact) {
      prim::fail(where + ": an int32 of " + std::to_string(s) +
                 " held as its 32 bits reaches it, which takes int32's values: between 2^24 and "
                 "2^25, float32 holds it neither exactly nor as a value no exact int32 can be "
                 "(docs/program-format.md, int32 bits)");
    }
    x = static_cast<float>(s);  // |s| >= 2^25: held rounded (rounded_int32.hpp), or exact
  }
  return r;
}

Value int32_from_bits(Value u) {
  bool fits = true;
  for (float x : u.t.data) {
    const std::int64_t s = static_cast<std::int32_t>(slot_to_u32(x));
    fits = fits && s >= -kExact && s <= kExact;
  }
  u.dtype = DType::kI32;
  u.bits32 = !fits;
  if (fits)
    for (float& x : u.t.data) x = static_cast<float>(static_cast<std::int32_t>(slot_to_u32(x)));
  return u;
}

std::vector<Value> eval_on_int32_bits(const Eqn& eqn, std::span<Value* const> ops,
                                      PrimContext& ctx) {
  const std::string& p = eqn.primitive;
  if (p == "convert_element_type" || p == "bitcast_convert_type") {
    const Value& x = *ops[0];
    const DType to = param_dtype(eqn, "new_dtype");
    Value u = as_u32(eqn, 0, x);
    if (to == DType::kI32) return {int32_from_bits(std::move(u))};
    if (to == DType::kU32) return {relabel(std::move(u), DType::kU32)};
    if (p == "bitcast_convert_type" && to == DType::kF32) return {relabel(std::move(u), to)};
    if (p == "convert_element_type" && (to == DType::kF32 || to == DType::kBool)) {
      for (float& v : u.t.data) {
        const auto s = static_cast<std::int32_t>(slot_to_u32(v));
        v = to == DType::kBool ? (s != 0 ? 1.0f : 0.0f) : static_cast<float>(s);
      }
      return {relabel(std::move(u), to)};
    }
    refuse(p + " to " + dtype_name(to));
  }
  if (p == "neg") {  // two's complement, modulo 2^32 (-(-2^31) is -2^31, as XLA)
    Value u = as_u32(eqn, 0, *ops[0]);
    for (float& v : u.t.data) v = u32_to_slot(0u - slot_to_u32(v));
    return {int32_from_bits(std::move(u))};
  }
  const bool sign = among(kSigned, p);
  if (!among(kSignless, p) && !sign && !among(kMoves, p)) refuse(p);
  std::vector<Value> in;
  std::vector<bool> was_int32;  // [operand]: an int32 (its uint32 stand-in's result is one too)
  for (std::size_t i = 0; i < ops.size(); ++i) {
    was_int32.push_back(ops[i]->dtype == DType::kI32 && !(p == "select_n" && i == 0));
    if (p == "select_n" && i == 0) {  // the predicate: bool, or an int32 of its values
      if (ops[0]->bits32) refuse("select_n's predicate");
      in.push_back(*ops[0]);
      continue;
    }
    in.push_back(as_u32(eqn, i, *ops[i]));
    if (sign) flip_sign(in.back());
  }
  const Primitive* k = u32_primitive(p);
  if (k == nullptr) k = find_primitive(p);
  if (k == nullptr || k->eval == nullptr) refuse(p);
  std::vector<Value> outs = run(k, eqn, in, ctx);
  // An int32 operand's stand-in gave a uint32 result: the int32 it stands for. A result per
  // operand (pvary of several, the placements) follows its own; another (a single result) is of
  // the dtype of its int32 operands. A comparison's bool, argmax's index, a genuine uint32: as is.
  const bool per_operand = outs.size() == ops.size() && outs.size() > 1;
  const bool any_int32 = std::find(was_int32.begin(), was_int32.end(), true) != was_int32.end();
  for (std::size_t k = 0; k < outs.size(); ++k) {
    Value& o = outs[k];
    if (o.dtype != DType::kU32 || !(per_operand ? was_int32[k] : any_int32)) continue;
    if (sign) flip_sign(o);
    o = int32_from_bits(std::move(o));
  }
  return outs;
}

}  // namespace meshrun::interp
