// The float32 arithmetic of the elementwise primitives, one element at a time: what each op
// computes, defined once here and called both by the primitives (elementwise.cpp, unary.cpp,
// elementwise_more.cpp, contract.cpp) and by the loop fusion (fusion.cpp), so a fused chain
// computes the very bits its equations compute one by one. Internal to lib/interp.
//
// Everything is compiled with -ffp-contract=off (CMakeLists.txt): a * b + c is never silently
// contracted; the only FMA is the explicit one of fma_contracted (contract.hpp's plan).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace meshrun::interp::prim {

// IEEE 754-2019 maximum and minimum, as JAX's max/min: NaN propagates (the first NaN operand is
// returned), and -0 < +0.
inline float max_ieee(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
inline float min_ieee(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

namespace f32 {

// + - * / are IEEE (correctly rounded), as XLA:CPU's.
inline float add(float a, float b) { return a + b; }
inline float sub(float a, float b) { return a - b; }
inline float mul(float a, float b) { return a * b; }
inline float div(float a, float b) { return a / b; }
inline float max(float a, float b) { return max_ieee(a, b); }
inline float min(float a, float b) { return min_ieee(a, b); }
inline float pow(float a, float b) { return std::pow(a, b); }

inline float neg(float a) { return -a; }
inline float abs(float a) { return std::fabs(a); }
inline float sign(float a) {
  return std::isnan(a) ? a : a > 0 ? 1.0f : a < 0 ? -1.0f : a;  // keeps -0 and +0
}
inline float square(float a) { return a * a; }
// The C library in float (XLA:CPU has its own approximations for several: the last bits may
// differ from JAX's).
inline float exp(float a) { return std::exp(a); }
inline float exp2(float a) { return std::exp2(a); }
inline float log(float a) { return std::log(a); }
inline float log1p(float a) { return std::log1p(a); }
inline float expm1(float a) { return std::expm1(a); }
// XLA:CPU's tanh, as its elemental emitter writes it for float32 (EmitFastTanh, with FMA): x
// itself below 0.0004 in magnitude, else a rational function of x clamped to +-7.99881172, its
// two polynomials in x^2 evaluated by Horner's rule with one fused multiply-add a step. Equal to
// JAX 0.10.2's tanh on all of 27000 inputs tried, NaN, infinities, zeros and denormals included
// (tests/unit/interp/primitives/elementwise_prims_test.cpp); the C library's tanhf differed on 60%.
inline float tanh(float a) {
  if (std::isnan(a) || std::fabs(a) < 0.0004f) return a;
  constexpr float kClamp = 7.99881172180175781f;
  const float x = std::fmin(std::fmax(a, -kClamp), kClamp);
  const float x2 = x * x;
  float p = -2.76076847742355e-16f;
  p = std::fma(x2, p, 2.00018790482477e-13f);
  p = std::fma(x2, p, -8.60467152213735e-11f);
  p = std::fma(x2, p, 5.12229709037114e-08f);
  p = std::fma(x2, p, 1.48572235717979e-05f);
  p = std::fma(x2, p, 6.37261928875436e-04f);
  p = std::fma(x2, p, 4.89352455891786e-03f);
  p = x * p;
  float q = 1.19825839466702e-06f;
  q = std::fma(x2, q, 1.18534705686654e-04f);
  q = std::fma(x2, q, 2.26843463243900e-03f);
  q = std::fma(x2, q, 4.89352518554385e-03f);
  return p / q;
}
// XLA expands logistic to 1 / (1 + exp(-x)).
inline float logistic(float a) { return 1.0f / (1.0f + std::exp(-a)); }
inline float erf(float a) { return std::erf(a); }
inline float erfc(float a) { return std::erfc(a); }
inline float sqrt(float a) { return std::sqrt(a); }  // IEEE, correctly rounded
inline float rsqrt(float a) { return 1.0f / std::sqrt(a); }

// The contracted a +- b*c of contract.hpp: fma(kb*b, c, ka*a), kb and ka each +1 or -1.
inline float fma_contracted(float kb, float b, float c, float ka, float a) {
  return std::fma(kb * b, c, ka * a);
}

// x^y by repeated squaring, as JAX lowers integer_pow (x^3 = x * (x*x), x^4 = (x*x) * (x*x));
// y > 0.
template <class T, class Mul>
T pow_by_squaring(T x, std::int64_t y, Mul mul) {
  bool have = false;
  T acc{};
  while (y > 0) {
    if (y & 1) {
      acc = have ? mul(acc, x) : x;
      have = true;
    }
    y >>= 1;
    if (y > 0) x = mul(x, x);
  }
  return acc;
}

// o[i] = x[i]^y for i < n (o may be x): 1 / x^-y for y < 0, and x^0 is 1. The small exponents
// have their own loops (the same products, in the same order, as the general one).
inline void integer_pow(const float* x, float* o, std::size_t n, std::int64_t y) {
  if (y == 0) {
    for (std::size_t i = 0; i < n; ++i) o[i] = 1.0f;
  } else if (y == 1) {
    if (o != x)
      for (std::size_t i = 0; i < n; ++i) o[i] = x[i];
  } else if (y == 2) {
    for (std::size_t i = 0; i < n; ++i) o[i] = x[i] * x[i];
  } else if (y == 3) {
    for (std::size_t i = 0; i < n; ++i) o[i] = x[i] * (x[i] * x[i]);
  } else if (y == -1) {
    for (std::size_t i = 0; i < n; ++i) o[i] = 1.0f / x[i];
  } else if (y == -2) {
    for (std::size_t i = 0; i < n; ++i) o[i] = 1.0f / (x[i] * x[i]);
  } else {
    const std::int64_t m = y < 0 ? -y : y;
    auto times = [](float a, float b) { return a * b; };
    for (std::size_t i = 0; i < n; ++i) {
      const float p = pow_by_squaring(x[i], m, times);
      o[i] = y < 0 ? 1.0f / p : p;
    }
  }
}

}  // namespace f32
}  // namespace meshrun::interp::prim
