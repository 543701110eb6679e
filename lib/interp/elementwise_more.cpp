// The elementwise primitives with params or several operands: integer_pow, round,
// reduce_precision, convert_element_type, select_n, clamp.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "interp/fused_kernels.hpp"
#include "interp/fusion.hpp"
#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {

namespace {

std::vector<Value> one(Value v) {
  std::vector<Value> r;
  r.push_back(std::move(v));
  return r;
}

std::vector<ValueType> float_unary_infer(const Eqn& eqn, std::span<const ValueType> in) {
  expect_operands(eqn, in.size(), 1);
  if (in[0].dtype != DType::kF32)
    fail(eqn.primitive + " does not accept dtype " + dtype_word(in[0].dtype));
  return {in[0]};
}

// integer_pow as JAX lowers it: repeated squaring (x^3 = x * (x*x), x^4 = (x*x) * (x*x)), and
// 1 / that for y < 0; x^0 is 1.
std::int64_t checked_y(const Eqn& eqn) {
  const std::int64_t y = param_int(eqn, "y");
  if (y < -(std::int64_t{1} << 30) || y > (std::int64_t{1} << 30))
    fail("integer_pow param 'y' out of range: " + std::to_string(y));
  return y;
}

std::vector<ValueType> integer_pow_infer(const Eqn& eqn, std::span<const ValueType> in,
                                         const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  if (in[0].dtype == DType::kBool) fail("integer_pow does not accept dtype bool");
  const std::int64_t y = checked_y(eqn);
  if (y < 0 && !is_float(in[0].dtype))
    fail("integer_pow with a negative exponent requires a float operand");
  return {in[0]};
}

std::vector<Value> integer_pow_eval(const Eqn& eqn, std::span<Value* const> in,
                                    std::span<const bool> owned, PrimContext&) {
  const std::int64_t y = checked_y(eqn);
  Value out = pass_through(in[0], owned[0]);
  float* o = out.t.data.data();
  const std::size_t n = out.t.size();
  if (is_narrow(out.dtype) && is_float(out.dtype)) {
    // bf16 and f16: XLA expands integer_pow into multiplies of the dtype, each converted from
    // its f32 product (JAX 0.10.2: bf16 -7.25^3 is -380, not -382, the rounded f32 cube).
    float (*fit)(float) = dtype_info(out.dtype).fit;
    const auto mul = [fit](float a, float b) { return fit(a * b); };
    for (std::size_t i = 0; i < n; ++i) {
      const float p = y == 0 ? 1.0f : f32::pow_by_squaring(o[i], y < 0 ? -y : y, mul);
      o[i] = y < 0 ? fit(1.0f / p) : p;
    }
  } else if (is_float(out.dtype)) {
    f32::integer_pow(o, o, n, y);
  } else {
    bool over = false;
    auto mul = [&](std::int64_t a, std::int64_t b) {
      const std::int64_t r = a * b;
      if (r > kMaxInt || r < -kMaxInt) over = true;
      return over ? 0 : r;  // once beyond, stays bounded (refused below)
    };
    for (std::size_t i = 0; i < n && !over; ++i)
      o[i] =
          y == 0
              ? 1.0f
              : static_cast<float>(f32::pow_by_squaring(static_cast<std::int64_t>(o[i]), y, mul));
    if (over) fail("integer_pow: an integer result is beyond 2^24, which meshrun holds exactly");
  }
  return one(std::move(out));
}

// round: rounding_method 0 (AWAY_FROM_ZERO, the default) or 1 (TO_NEAREST_EVEN).
int rounding_method(const Eqn& eqn) {
  if (!eqn.params.is_object() || !eqn.params.contains("rounding_method")) return 0;
  const nlohmann::json& j = eqn.params["rounding_method"];
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "AWAY_FROM_ZERO" || s == "RoundingMethod.AWAY_FROM_ZERO") return 0;
    if (s == "TO_NEAREST_EVEN" || s == "RoundingMethod.TO_NEAREST_EVEN") return 1;
    fail("round param 'rounding_method': unknown method");
  }
  const std::int64_t m = param_int(eqn, "rounding_method");
  if (m != 0 && m != 1) fail("round param 'rounding_method' must be 0 or 1");
  return static_cast<int>(m);
}

std::vector<ValueType> round_infer(const Eqn& eqn, std::span<const ValueType> in,
                                   const PrimContext&) {
  rounding_method(eqn);
  // bf16 and f16 too (issue #49, dtypes2): their values rounded to an integer are theirs
  expect_operands(eqn, in.size(), 1);
  if (!is_float(in[0].dtype))
    fail(eqn.primitive + " does not accept dtype " + dtype_word(in[0].dtype));
  return {in[0]};
}

std::vector<Value> round_eval(const Eqn& eqn, std::span<Value* const> in,
                              std::span<const bool> owned, PrimContext&) {
  const int method = rounding_method(eqn);
  Value out = pass_through(in[0], owned[0]);
  if (method == 0) {
    for (float& v : out.t.data) v = std::round(v);
  } else {
    for (float& v : out.t.data) v = std::nearbyint(v);  // the default mode: to nearest even
  }
  return one(std::move(out));
}

// reduce_precision as XLA emits it: round the mantissa to nearest even, then flush the exponent
// to +-inf / +-0 outside the reduced range; NaN passes through.
void precision_params(const Eqn& eqn, int* e, int* m) {
  const std::int64_t eb = param_int(eqn, "exponent_bits");
  const std::int64_t mb = param_int(eqn, "mantissa_bits");
  if (eb < 1 || eb > 8 || mb < 0 || mb > 23)
    fail("reduce_precision needs 1 <= exponent_bits <= 8 and 0 <= mantissa_bits <= 23 for f32");
  *e = static_cast<int>(eb);
  *m = static_cast<int>(mb);
}

std::vector<ValueType> reduce_precision_infer(const Eqn& eqn, std::span<const ValueType> in,
                                              const PrimContext&) {
  int e, m;
  precision_params(eqn, &e, &m);
  return float_unary_infer(eqn, in);
}

float reduce_precision(float x, int ebits, int mbits) {
  if (std::isnan(x)) return x;
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if (mbits < 23) {
    const std::uint32_t last = 1u << (23 - mbits);
    const std::uint32_t bias = (last >> 1) - 1 + ((u & last) >> (23 - mbits));
    u = (u + bias) & ~(last - 1);
  }
  if (ebits < 8) {
    const std::uint32_t exp_mask = 0xffu << 23;
    const std::uint32_t reduced_bias = (1u << (ebits - 1)) - 1;
    const std::uint32_t max_exp = 127 + reduced_bias, min_exp = 127 - reduced_bias;
    const std::uint32_t e = u & exp_mask;
    const std::uint32_t sign = u & 0x80000000u;
    if (e > (max_exp << 23)) {
      u = sign | exp_mask;
    } else if (e <= (min_exp << 23)) {
      u = sign;
    }
  }
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

std::vector<Value> reduce_precision_eval(const Eqn& eqn, std::span<Value* const> in,
                                         std::span<const bool> owned, PrimContext&) {
  int e, m;
  precision_params(eqn, &e, &m);
  Value out = pass_through(in[0], owned[0]);
  for (float& v : out.t.data) v = reduce_precision(v, e, m);
  return one(std::move(out));
}

// convert_element_type: f32 -> i32 truncates toward zero (NaN -> 0, saturating, as XLA), and is
// refused beyond 2^24; -> bool is x != 0 (NaN -> true); i32 and bool -> f32 are exact. Issue #49:
// into bf16 and f16 rounds to nearest even; a float into i8 ... u16 saturates; an integer wraps.
std::vector<ValueType> convert_infer(const Eqn& eqn, std::span<const ValueType> in,
                                     const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  return {{param_dtype(eqn, "new_dtype"), in[0].shape}};
}

std::vector<Value> convert_eval(const Eqn& eqn, std::span<Value* const> in,
                                std::span<const bool> owned, PrimContext&) {
  const DType to = param_dtype(eqn, "new_dtype");
  const DType from = in[0]->dtype;
  Value out = pass_through(in[0], owned[0]);
  out.dtype = to;
  const DTypeInfo& t = dtype_info(to);
  if (to == DType::kBool && from != DType::kBool) {
    for (float& v : out.t.data) v = v != 0.0f ? 1.0f : 0.0f;
  } else if (to == DType::kI32 && is_float(from)) {
    for (float& v : out.t.data) v = f32_to_i32(v, eqn);
  } else if (is_narrow(to) && t.kind != DKind::kFloat && is_float(from)) {
    // float -> i8 ... u16 as XLA:CPU converts: toward zero, saturating at the dtype's bounds,
    // NaN -> 0 (JAX 0.10.2: 128.5 -> int8 127, -inf -> -128, 300 -> uint8 255, -1 -> 0).
    const bool sig = t.kind == DKind::kSigned;
    const float hi = sig ? std::ldexp(1.0f, t.bits - 1) - 1 : std::ldexp(1.0f, t.bits) - 1;
    const float lo = sig ? -std::ldexp(1.0f, t.bits - 1) : 0.0f;
    for (float& v : out.t.data)
      v = std::isnan(v) ? 0.0f : std::fmin(std::fmax(std::trunc(v), lo), hi) + 0.0f;
  } else if (to != from && (is_narrow(to) || t.kind == DKind::kFloat)) {
    // Into bf16 or f16 (rounded to nearest even), or an integer into i8 ... u16 (wrapped).
    for (float& v : out.t.data) v = t.fit(v);
  }
  return one(std::move(out));
}

// select_n(which, *cases): which is bool (2 cases at most) or i32, a scalar or of the cases' shape.
std::vector<ValueType> select_n_infer(const Eqn& eqn, std::span<const ValueType> in,
                                      const PrimContext&) {
  expect_operands(eqn, in.size(), 2, true);
  const ValueType& which = in[0];
  if (is_float(which.dtype))
    fail(std::string("select_n requires a bool or int32 predicate, got ") +
         dtype_word(which.dtype));
  if (which.dtype == DType::kBool && in.size() > 3)
    fail("select_n with a bool predicate takes at most 2 cases, got " +
         std::to_string(in.size() - 1));
  for (std::size_t i = 2; i < in.size(); ++i) {
    if (in[i] != in[1]) {
      fail("select_n cases must have the same shapes and dtypes, got " + type_str(in[1]) + " and " +
           type_str(in[i]));
    }
  }
  if (!which.shape.empty() && which.shape != in[1].shape) {
    fail("select_n predicate shape must be scalar or equal to the cases' shape, got " +
         dims_str(which.shape) + " and " + dims_str(in[1].shape));
  }
  return {in[1]};
}

std::vector<Value> select_n_eval(const Eqn&, std::span<Value* const> in,
                                 std::span<const bool> owned, PrimContext&) {
  const std::size_t cases = in.size() - 1;
  auto pick = [&](float w) {
    const auto k = static_cast<std::int64_t>(w);
    if (k < 0 || static_cast<std::size_t>(k) >= cases)
      fail("select_n predicate " + std::to_string(k) + " is out of range for " +
           std::to_string(cases) + " cases");
    return static_cast<std::size_t>(k) + 1;
  };
  if (in[0]->t.shape.empty() && !in[1]->t.shape.empty()) {
    const std::size_t k = pick(in[0]->t.data[0]);
    return one(pass_through(in[k], owned[k]));
  }
  const std::size_t n = in[1]->t.size();
  std::vector<const float*> src(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) src[i] = in[i]->t.data.data();
  std::size_t reuse = 0;
  for (std::size_t i = 0; i < in.size() && reuse == 0; ++i)
    if (owned[i] && in[i]->t.size() == n) reuse = i + 1;
  // The cases' shape before an operand lends its buffer (in[1] may be the one moved from).
  const Shape shape = in[1]->t.shape;
  Value out =
      reuse ? Value(in[1]->dtype, std::move(in[reuse - 1]->t)) : Value(in[1]->dtype, Tensor(shape));
  out.t.shape = shape;
  float* o = out.t.data.data();  // may be one of src[]: each element reads its own index only
  const float* w = src[0];
  if (cases == 2) {
    // A bool or 0/1 predicate (every one JAX emits for two cases, as relu's gradient mask):
    // checked in one pass, then a select without a branch per element (a random mask
    // mispredicted half of them: 6 ns an element).
    bool valid = true;
    for (std::size_t i = 0; i < n; ++i) valid &= (w[i] == 0.0f) | (w[i] == 1.0f);
    if (!valid)
      for (std::size_t i = 0; i < n; ++i)
        if (w[i] != 0.0f && w[i] != 1.0f) pick(w[i]);
    const float* f = src[1];
    const float* t = src[2];
    for (std::size_t i = 0; i < n; ++i) {
      const float ti = t[i], fi = f[i];
      o[i] = w[i] != 0.0f ? ti : fi;
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) o[i] = src[pick(w[i])][i];
  }
  return one(std::move(out));
}

// clamp(lo, x, hi) as XLA: min(hi, max(lo, x)), NaN propagating; lo and hi scalars or x's shape.
std::vector<ValueType> clamp_infer(const Eqn& eqn, std::span<const ValueType> in,
                                   const PrimContext&) {
  expect_operands(eqn, in.size(), 3);
  if (in[1].dtype == DType::kBool) fail("clamp does not accept dtype bool");
  for (std::size_t i : {std::size_t{0}, std::size_t{2}}) {
    if (in[i].dtype != in[1].dtype) {
      fail("clamp requires arguments to have the same dtypes, got " +
           std::string(dtype_word(in[i].dtype)) + ", " + dtype_word(in[1].dtype));
    }
    if (!in[i].shape.empty() && in[i].shape != in[1].shape) {
      fail(std::string("clamp requires ") + (i == 0 ? "min" : "max") +
           ".shape == operand.shape or " + (i == 0 ? "min" : "max") + ".shape == (), got " +
           dims_str(in[i].shape) + " and " + dims_str(in[1].shape));
    }
  }
  return {in[1]};
}

std::vector<Value> clamp_eval(const Eqn&, std::span<Value* const> in, std::span<const bool> owned,
                              PrimContext&) {
  const float* lo = in[0]->t.data.data();
  const float* hi = in[2]->t.data.data();
  const std::size_t slo = in[0]->t.shape.empty() ? 0 : 1, shi = in[2]->t.shape.empty() ? 0 : 1;
  Value out = pass_through(in[1], owned[1]);
  float* o = out.t.data.data();
  for (std::size_t i = 0; i < out.t.size(); ++i)
    o[i] = min_ieee(hi[i * shi], max_ieee(lo[i * slo], o[i]));
  return one(std::move(out));
}

// integer_pow's fused kernel: f32::integer_pow, as its eval, with FusedOp::y its param "y".
void fused_integer_pow(const FusedOp& op, const FusedSrc* in, float* o, std::size_t c) {
  if (in[0].scalar) {
    float r;
    f32::integer_pow(&in[0].s, &r, 1, op.y);
    for (std::size_t i = 0; i < c; ++i) o[i] = r;
  } else {
    f32::integer_pow(in[0].p, o, c, op.y);
  }
}

constexpr Primitive integer_pow() {
  Primitive p = fusable({&integer_pow_infer, &integer_pow_eval}, &fused_integer_pow, 1);
  p.fused_param = "y";
  return p;
}

}  // namespace

std::span<const Entry> elementwise_more_entries() {
  static const Entry kEntries[] = {
      {"integer_pow", integer_pow()},
      {"round", {&round_infer, &round_eval}},
      {"reduce_precision", {&reduce_precision_infer, &reduce_precision_eval}},
      {"convert_element_type", {&convert_infer, &convert_eval}},
      {"select_n", {&select_n_infer, &select_n_eval}},
      {"clamp", {&clamp_infer, &clamp_eval}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
