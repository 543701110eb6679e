#include "interp/ir.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace meshrun::interp {

namespace {

float bits_float(std::uint32_t u) {
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}
std::uint32_t float_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// The conversions below work on the bits, as XLA:CPU's converts do: no float arithmetic, so no
// flush of subnormals (the evaluator runs under XLA's FTZ/DAZ, scalar_ops.hpp's FlushDenormals).
float fit_f32(float v) { return v; }
float fit_bool(float v) { return v != 0 ? 1.0f : 0.0f; }

// float32 -> bfloat16: round to nearest even on the bits (a float32 subnormal keeps its bf16
// subnormal; past bf16's largest it is inf), NaN a quiet NaN of its sign.
float fit_bf16(float x) {
  std::uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    u = (u & 0x80000000u) | 0x7fc00000u;
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
  }
  return bits_float(u);
}

// float32 -> float16 -> float32, as XLA:CPU's convert (and numpy's): round to nearest even to
// 11 bits, to multiples of 2^-24 below 2^-14 (f16's subnormals), inf from 65520 on, NaN quiet.
float fit_f16(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u, ax = u & 0x7fffffffu;
  std::uint32_t h;
  if (ax > 0x7f800000u) {
    h = sign | 0x7e00u;
  } else if (ax >= 0x477ff000u) {  // 65520 and beyond (inf too)
    h = sign | 0x7c00u;
  } else if (ax >= 0x38800000u) {  // 2^-14: an f16 normal
    h = sign | ((ax - (112u << 23) + 0xfffu + ((ax >> 13) & 1u)) >> 13);
  } else {
    const std::uint32_t e = ax >> 23;
    std::uint32_t r = 0;
    if (e >= 101) {  // below 2^-25 everything rounds to 0
      const std::uint32_t m = (ax & 0x7fffffu) | 0x800000u, sh = 126 - e;  // units of 2^-24
      r = m >> sh;
      const std::uint32_t rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
      if (rem > half || (rem == half && (r & 1u))) ++r;
    }
    h = sign | r;
  }
  // back to float32 (every f16 is a float32 normal)
  const std::uint32_t he = (h >> 10) & 0x1fu, hm = h & 0x3ffu, s32 = (h & 0x8000u) << 16;
  if (he == 0x1f) return bits_float(s32 | 0x7f800000u | (hm << 13));
  if (he != 0) return bits_float(s32 | ((he + 112u) << 23) | (hm << 13));
  if (hm == 0) return bits_float(s32);
  std::uint32_t e = 113, m = hm;
  while ((m & 0x400u) == 0) {
    m <<= 1;
    --e;
  }
  return bits_float(s32 | (e << 23) | ((m & 0x3ffu) << 13));
}

// An integer (exact in int64) modulo 2^bits, as two's complement or unsigned.
template <int kBits, bool kSigned>
float wrap_int(std::int64_t v) {
  const std::uint64_t m = (std::uint64_t{1} << kBits) - 1;
  const std::uint64_t u = static_cast<std::uint64_t>(v) & m;
  if (kSigned && u >= (std::uint64_t{1} << (kBits - 1))) {
    return static_cast<float>(static_cast<std::int64_t>(u) - (std::int64_t{1} << kBits));
  }
  return static_cast<float>(u);
}
template <int kBits, bool kSigned>
float fit_int(float v) {
  return wrap_int<kBits, kSigned>(static_cast<std::int64_t>(v));
}
float wrap_plain(std::int64_t v) { return static_cast<float>(v); }
// uint32: the slot holds the bits; a result computed on them is already in the dtype.
float wrap_u32(std::int64_t v) { return bits_float(static_cast<std::uint32_t>(v)); }
float wrap_bool(std::int64_t v) { return v != 0 ? 1.0f : 0.0f; }

// The dtypes, in DType's order.
constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, "f32", "float32", 32, DKind::kFloat, &fit_f32, &wrap_plain},
    {DType::kI32, "i32", "int32", 32, DKind::kSigned, &fit_f32, &wrap_plain},
    {DType::kBool, "bool", "bool", 1, DKind::kBool, &fit_bool, &wrap_bool},
    // ---- issue #49: the dtypes float32 holds exactly
    {DType::kBF16, "bf16", "bfloat16", 16, DKind::kFloat, &fit_bf16, &wrap_plain},
    {DType::kF16, "f16", "float16", 16, DKind::kFloat, &fit_f16, &wrap_plain},
    {DType::kI8, "i8", "int8", 8, DKind::kSigned, &fit_int<8, true>, &wrap_int<8, true>},
    {DType::kU8, "u8", "uint8", 8, DKind::kUnsigned, &fit_int<8, false>, &wrap_int<8, false>},
    {DType::kI16, "i16", "int16", 16, DKind::kSigned, &fit_int<16, true>, &wrap_int<16, true>},
    {DType::kU16, "u16", "uint16", 16, DKind::kUnsigned, &fit_int<16, false>, &wrap_int<16, false>},
    // ---- issue #49, jax.random: uint32 as its bits in the float32 slot (fit: nothing to do)
    {DType::kU32, "u32", "uint32", 32, DKind::kUnsigned, &fit_f32, &wrap_u32},
};

}  // namespace

float u32_to_slot(std::uint32_t u) { return bits_float(u); }
std::uint32_t slot_to_u32(float slot) { return float_bits(slot); }

const DTypeInfo& dtype_info(DType t) { return kDTypes[static_cast<std::size_t>(t)]; }

const char* dtype_name(DType t) { return dtype_info(t).name; }

bool parse_dtype(const std::string& name, DType* out) {
  for (const DTypeInfo& d : kDTypes) {
    if (name == d.name) {
      *out = d.dtype;
      return true;
    }
  }
  return false;
}

bool holds_value(DType t, double v) {
  const DTypeInfo& d = dtype_info(t);
  if (std::isnan(v)) return d.kind == DKind::kFloat;
  if (t == DType::kU32) return v == std::floor(v) && v >= 0 && v <= 4294967295.0;
  if (d.kind == DKind::kFloat) {
    if (t == DType::kF32) return std::isinf(v) || std::fabs(v) <= std::numeric_limits<float>::max();
    // A JSON number names the float32 nearest it (9 digits do): that float must be the dtype's.
    const auto f = static_cast<float>(v);
    return float_bits(d.fit(f)) == float_bits(f);
  }
  if (v != std::floor(v) || std::fabs(v) > double(1 << 24)) return false;
  return static_cast<double>(d.wrap(static_cast<std::int64_t>(v))) == v;
}

std::string type_str(const ValueType& t) {
  std::string s = dtype_name(t.dtype);
  s += '[';
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(t.shape[i]);
  }
  return s + ']';
}

void mark_last_uses(Jaxpr& jx) {
  std::vector<int> last(jx.types.size(), -1);
  for (std::size_t e = 0; e < jx.eqns.size(); ++e) {
    jx.eqns[e].last_use.clear();
    for (const Atom& a : jx.eqns[e].in) {
      if (!a.is_literal()) last[static_cast<std::size_t>(a.var)] = static_cast<int>(e);
    }
  }
  for (const Atom& a : jx.outvars) {
    if (!a.is_literal()) last[static_cast<std::size_t>(a.var)] = -1;
  }
  for (std::size_t v = 0; v < last.size(); ++v) {
    if (last[v] >= 0) jx.eqns[static_cast<std::size_t>(last[v])].last_use.push_back(int(v));
  }
}

const Jaxpr* Eqn::sub(const std::string& name) const {
  for (const auto& [key, jaxpr] : subs)
    if (key == name) return jaxpr.get();
  return nullptr;
}

std::vector<const Jaxpr*> Eqn::subs_of(const std::string& name) const {
  std::vector<const Jaxpr*> out;
  for (const auto& [key, jaxpr] : subs)
    if (key == name) out.push_back(jaxpr.get());
  return out;
}

std::string Eqn::place() const {
  std::string s = where + " (" + primitive;
  if (!source.empty()) s += " at " + source;
  return s + ")";
}

}  // namespace meshrun::interp
