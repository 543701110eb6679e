// The float32 math functions JAX lowers through XLA's own decompositions: tan, asin, acos, atan,
// sinh, cosh, asinh, acosh, atanh, lgamma, digamma. Each is written operation by operation as
// JAX 0.10.2's optimized HLO for it computes on CPU (the CHLO expansions of jax._src.lax and
// XLA's, read from `jax.jit(f).lower(x).compile().as_text()`), on scalar_ops.hpp's exp, log,
// log1p and expm1 (XLA:CPU's own approximations), the C library's sinf, cosf, tanf and atan2f
// (which XLA:CPU calls) and IEEE + - * / sqrt.
//
// XLA:CPU runs with denormals flushed (MXCSR FTZ and DAZ): the C library's functions see a
// subnormal operand's bits but compute with it as a zero. The kernels here run under the same
// flags (scalar_ops.hpp's FlushDenormals, x86-64; elsewhere a subnormal is not flushed and a result
// near one may differ from JAX's), so an operand or result below 2^-126 in magnitude gives JAX's
// bits.
//
// Each equal to JAX 0.10.2's result (NaN payloads aside) on all of 10^6 inputs -- random bit
// patterns (NaN, infinities, zeros and subnormals among them), uniform in (-100, 100) and (-2, 2),
// and e^u for u uniform in (-20, 20) -- compared with tests/jax/dtype_rules.py's inputs in `make
// test`. atan (JAX: atan2(x, 1)) has two: XLA:CPU's vectorized loop calls the C library's
// atan2f, 4 lanes at a time, while the scalar code -- a loop LLVM does not vectorize, and the tail
// of one it does -- calls XLA's own atan_f32 (xla/codegen/intrinsic/cpp/eigen_unary.cc: Eigen's
// generic_atan rational function, x itself below 1e-3, pi/2 - atan(1/x) above 1, its polynomials
// contracted to FMAs), up to 5 ulps apart. atan_eval picks per element as measured on JAX 0.10.2:
// see there.
#include <cmath>
#include <cstdint>
#include <limits>

#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {
namespace {

constexpr float kLn2 = 0.693147182f;  // the f32 constants of JAX's expansions, as its HLO prints
constexpr float kPi = 3.14159274f;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

float tan(float x) { return std::tan(x); }
float atan(float x) { return std::atan2(x, 1.0f); }  // JAX: atan2(x, 1), vectorized

// XLA:CPU's scalar atan (its atan_f32 intrinsic): for |x| >= 1e-3, t = min(|x|, 1/|x|), r = t
// p(t^2) / q(t^2) (degrees 2 and 3, Horner's rule with FMAs), pi/2 - r when |x| > 1, x's sign.
float atan_scalar(float x) {
  const float ax = std::fabs(x);
  if (ax < 1e-3f) return x;
  const bool large = ax > 1.0f;
  const float t = large ? 1.0f / ax : ax;
  const float t2 = t * t;
  const float p =
      std::fma(std::fma(1.12026982009410858154296875e-01f, t2, 7.296695709228515625e-01f), t2,
               8.109951019287109375e-01f);
  const float q = std::fma(
      std::fma(std::fma(1.00917108356952667236328125e-02f, t2, 2.8318560123443603515625e-01f), t2,
               1.0f),
      t2, 8.109951019287109375e-01f);
  const float r = t * (p / q);
  return std::copysign(large ? 1.57079632679489661923f - r : r, x);
}
// asin(x) = 2 atan2(x, 1 + sqrt((1 - x)(1 + x)))
float asin(float x) {
  const float a = std::atan2(x, std::sqrt((1.0f - x) * (x + 1.0f)) + 1.0f);
  return a + a;
}
// acos(x) = atan2(sqrt((1 - x)(1 + x)), x)
float acos(float x) { return std::atan2(std::sqrt((1.0f - x) * (x + 1.0f)), x); }
// sinh: (e + e / (e + 1)) / 2 with e = expm1(x) for |x| < 1, else exp(x - ln 2) - exp(-ln 2 - x).
float sinh(float x) {
  if (std::fabs(x) < 1.0f) {
    const float e = f32::expm1(x);
    return (e + e / (e + 1.0f)) * 0.5f;
  }
  return f32::exp(x + -kLn2) - f32::exp(-kLn2 - x);
}
float cosh(float x) { return f32::exp(x + -kLn2) + f32::exp(-kLn2 - x); }
// asinh: sign(x) * (log|x| + ln 2 for |x| >= 2^64, else log1p(|x| + x^2 / (sqrt(x^2 + 1) + 1))).
float asinh(float x) {
  const float ax = std::fabs(x);
  const float sign = f32::sign(x);
  if (ax >= 1.8446743e+19f) return sign * (f32::log(ax) + kLn2);
  const float x2 = x * x;
  return sign * f32::log1p(ax + x2 / (std::sqrt(x2 + 1.0f) + 1.0f));
}
// acosh: log(x) + ln 2 for x >= 2^127, else log1p(s * (sqrt(x + 1) + s)) with s = sqrt(x - 1).
float acosh(float x) {
  if (x >= 1.70141173e+38f) return f32::log(x) + kLn2;
  const float s = std::sqrt(x + -1.0f);
  return f32::log1p(s * (std::sqrt(x + 1.0f) + s));
}
// log1p as LLVM contracts it inside JAX's atanh: its small-x path's last multiply-add fused the
// other way, (x^3 * p/q) + (-x^2 / 2) in one rounding, where the log1p of scalar_ops.hpp (JAX's
// log1p alone, and inside asinh, acosh, lgamma and digamma) rounds x^3 * p/q first: 661 of the
// 10^6 inputs differ (by up to 2 ulp) between the two.
float log1p_in_atanh(float x) {
  if (!(std::fabs(x) < 0.41421356237309504880f)) return f32::log(x + 1.0f);
  constexpr float kNum[7] = {4.5270000862445199635215e-5f, 4.9854102823193375972212e-1f,
                             6.5787325942061044846969e0f,  2.9911919328553073277375e1f,
                             6.0949667980987787057556e1f,  5.7112963590585538103336e1f,
                             2.0039553499201281259648e1f};
  constexpr float kDen[7] = {1.0f,
                             1.5062909083469192043167e1f,
                             8.3047565967967209469434e1f,
                             2.2176239823732856465394e2f,
                             3.0909872225312059774938e2f,
                             2.1642788614495947685003e2f,
                             6.0118660497603843919306e1f};
  float p = 0.0f, q = 0.0f;
  for (int i = 0; i < 7; ++i) {
    p = std::fma(p, x, kNum[i]);
    q = std::fma(q, x, kDen[i]);
  }
  const float x2 = x * x;
  return x + std::fma(x * x2, p / q, -0.5f * x2);
}
// atanh: NaN for |x| > 1, else (log1p(x) - log1p(-x)) / 2.
float atanh(float x) {
  if (std::fabs(x) > 1.0f) return kNaN;
  return (log1p_in_atanh(x) - log1p_in_atanh(-x)) * 0.5f;
}

// The Lanczos approximation JAX's lgamma and digamma share (g = 7, n = 9), as float32.
constexpr float kLanczos[8] = {676.520386f, -1259.13916f,  771.323425f,     -176.615036f,
                               12.5073433f, -0.138571098f, 9.98436917e-06f, 1.50563267e-07f};
constexpr float kLogLanczosG = 2.01490307f;  // log(7.5)
constexpr float kInvLanczosG = 0.13333334f;  // 1 / 7.5

// lgamma: the Lanczos series for x >= 1/2, reflected (log(pi) - log|sin(pi frac)| - lgamma(1 -
// x)) below; the one fused multiply-add is XLA's contraction of (z + 1/2 - t / log t) * log t +
// log(sqrt(2 pi)).
float lgamma(float x) {
  const float ax = std::fabs(x);
  if (ax == kInf) return kInf;
  const bool reflect = x < 0.5f;
  const float z = reflect ? -x : x + -1.0f;
  const float t = z + 7.5f;
  const float log_t = f32::log1p(z * kInvLanczosG) + kLogLanczosG;
  const float a = (z + 0.5f) - t / log_t;
  const float head = std::fma(a, log_t, 0.918938518f);
  float s = kLanczos[0] / (z + 1.0f) + 1.0f;
  for (int k = 1; k < 8; ++k) s = s + kLanczos[k] / (z + static_cast<float>(k + 1));
  const float log_y = head + f32::log(s);
  if (!reflect) return log_y;
  const float frac = ax - std::floor(ax);
  const float reduced = 0.5f < frac ? 1.0f - frac : frac;
  const float log_sin = f32::log(std::sin(reduced * kPi));
  return std::isfinite(log_sin) ? (1.14472985f - log_sin) - log_y : -log_sin;
}

// digamma: log t + sum' / sum - 7 / t of the Lanczos series for x >= 1/2, minus pi cot(pi x)
// (its argument reduced by |floor(x + 1/2)|) below; NaN at the poles 0, -1, -2, ...
float digamma(float x) {
  if (x <= 0.0f && x == std::floor(x)) return kNaN;
  const bool reflect = x < 0.5f;
  const float z = reflect ? -x : x + -1.0f;
  const float log_t = f32::log1p(z * kInvLanczosG) + kLogLanczosG;
  float num = 0.0f;
  for (int k = 0; k < 8; ++k) {
    const float zk = z + static_cast<float>(k + 1);
    num = num - kLanczos[k] / (zk * zk);
  }
  float den = kLanczos[0] / (z + 1.0f) + 1.0f;
  for (int k = 1; k < 8; ++k) den = den + kLanczos[k] / (z + static_cast<float>(k + 1));
  const float r = (log_t + num / den) - 7.0f / (z + 7.5f);
  if (!reflect) return r;
  const float w = (x + std::fabs(std::floor(x + 0.5f))) * kPi;
  return r - (std::cos(w) * kPi) / std::sin(w);
}

template <float (*F)(float)>
Types float_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  check_dtype(eqn, in[0].dtype, kF);
  return {make_type(in[0].dtype, in[0].shape)};
}

template <float (*F)(float)>
Values float_eval(const Eqn&, std::span<Value* const> in, std::span<const bool> owned,
                  PrimContext&) {
  Value out = pass_through(in[0], owned[0]);
  const FlushDenormals flush;
  for (float& v : out.t.data) v = F(v);
  return one(std::move(out));
}

template <float (*F)(float)>
constexpr Primitive float_math() {
  return {&float_infer<F>, &float_eval<F>};
}

// atan on JAX 0.10.2's CPU, measured element by element against both functions (sizes 1 to 200,
// 255 to 1025, and 76 others up to 65541): an array of rank 0 or 1 of n <= 2^16 elements runs the
// scalar atan_f32 throughout when n <= 49 (LLVM unrolls the loop whole), else atan2f in blocks of 4
// and atan_f32 on the last n % 4. Beyond 2^16 elements XLA splits the loop into parallel tasks
// (the scalar elements then follow the split: a prime n is scalar throughout) and rank >= 2 loops
// follow no rule found: there the vectorized atan2f throughout, as before.
inline constexpr std::size_t kAtanUnrolled = 49, kAtanBlock = 4, kAtanSplit = std::size_t{1} << 16;

Values atan_eval(const Eqn&, std::span<Value* const> in, std::span<const bool> owned,
                 PrimContext&) {
  Value out = pass_through(in[0], owned[0]);
  const FlushDenormals flush;
  const std::size_t n = out.t.data.size();
  std::size_t scalar_from = n;
  if (out.t.shape.size() <= 1 && n <= kAtanSplit)
    scalar_from = n <= kAtanUnrolled ? 0 : n - n % kAtanBlock;
  float* d = out.t.data.data();
  for (std::size_t i = 0; i < scalar_from; ++i) d[i] = atan(d[i]);
  for (std::size_t i = scalar_from; i < n; ++i) d[i] = atan_scalar(d[i]);
  return one(std::move(out));
}

}  // namespace

std::span<const Entry> float_math_entries() {
  static const Entry kEntries[] = {
      {"tan", float_math<&tan>()},         {"asin", float_math<&asin>()},
      {"acos", float_math<&acos>()},       {"atan", {&float_infer<&atan>, &atan_eval}},
      {"sinh", float_math<&sinh>()},       {"cosh", float_math<&cosh>()},
      {"asinh", float_math<&asinh>()},     {"acosh", float_math<&acosh>()},
      {"atanh", float_math<&atanh>()},     {"lgamma", float_math<&lgamma>()},
      {"digamma", float_math<&digamma>()},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
