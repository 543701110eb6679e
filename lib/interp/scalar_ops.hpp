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
#include <cstring>
#include <limits>

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

namespace meshrun::interp::prim {

// XLA:CPU runs with denormals flushed to zero (MXCSR FTZ and DAZ): a subnormal operand of its
// arithmetic counts as a zero of its sign, and a subnormal result becomes one. ftz(x) is that
// flush, for the approximations below that follow XLA's code operation by operation.
inline float ftz(float a) {
  std::uint32_t u;
  std::memcpy(&u, &a, 4);
  if ((u & 0x7f800000u) != 0) return a;
  u &= 0x80000000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// IEEE 754-2019 maximum and minimum, as JAX's max/min: NaN propagates (the first NaN operand is
// returned), and -0 < +0; a subnormal operand is a zero of its sign, as under XLA's flush
// (max(-1e-45, 0) is +0, min(1e-39, 1) is +0 in JAX).
inline float max_ieee(float a, float b) {
  a = ftz(a);
  b = ftz(b);
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
inline float min_ieee(float a, float b) {
  a = ftz(a);
  b = ftz(b);
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

// XLA:CPU's floating-point environment for as long as it lives: MXCSR's flush-to-zero (bit 15)
// and denormals-are-zero (bit 6), restored after (x86-64; elsewhere nothing, and a subnormal
// operand of the C library's functions may give another result than JAX's).
class FlushDenormals {
 public:
#if defined(__x86_64__) || defined(_M_X64)
  FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
  ~FlushDenormals() { _mm_setcsr(saved_); }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_;
#endif
};

namespace f32 {

// + - * / are IEEE (correctly rounded), as XLA:CPU's.
inline float add(float a, float b) { return a + b; }
inline float sub(float a, float b) { return a - b; }
inline float mul(float a, float b) { return a * b; }
inline float div(float a, float b) { return a / b; }
inline float max(float a, float b) { return max_ieee(a, b); }
inline float min(float a, float b) { return min_ieee(a, b); }

inline float neg(float a) { return -a; }
inline float abs(float a) { return std::fabs(a); }
inline float sign(float a) {
  return std::isnan(a) ? a : a > 0 ? 1.0f : a < 0 ? -1.0f : a;  // keeps -0 and +0
}
inline float square(float a) { return a * a; }
// XLA:CPU's exp for float32: the Cephes polynomial of its polynomial_approximations, x clamped
// to [-87.8, 88.8], n = floor(x log2(e) + 1/2) clamped to [-127, 127], x - n ln(2) in two parts
// and the polynomial with fused multiply-adds (as LLVM contracts them), times 2^n built from its
// bits (0 for n = -127). Equal to JAX 0.10.2's exp on 10^6 inputs (random bits, (-100, 100),
// (-2, 2), e^(-20..20)); the C library's expf differed on 8.6% of 10^4.
inline float exp(float a) {
  a = ftz(a);
  if (std::isnan(a)) return a;
  float x = std::fmin(std::fmax(a, -87.8f), 88.8f);
  float n = std::floor(x * 1.44269504088896341f + 0.5f);
  n = std::fmin(std::fmax(n, -127.0f), 127.0f);
  x = std::fma(-0.693359375f, n, x);
  x = std::fma(2.12194440e-4f, n, x);
  float z = std::fma(x, 1.9875691500e-4f, 1.3981999507e-3f);
  z = std::fma(z, x, 8.3334519073e-3f);
  z = std::fma(z, x, 4.1665795894e-2f);
  z = std::fma(z, x, 1.6666665459e-1f);
  z = std::fma(z, x, 5.0000001201e-1f);
  z = std::fma(z, x * x, x);
  z = 1.0f + z;
  const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23;
  float p;
  std::memcpy(&p, &bits, 4);
  return ftz(z * p);
}
// exp2 as XLA expands it: exp(x * ln 2).
inline float exp2(float a) { return exp(ftz(a * 0.693147182f)); }
// XLA:CPU's log for float32: Cephes' logf (mantissa in [sqrt(1/2), sqrt(2)), a degree-8
// polynomial with fused multiply-adds), 0 -> -inf, x < 0 and NaN -> NaN, inf -> inf. Equal to
// JAX 0.10.2's log on the 10^6 inputs of exp; the C library's logf differed on 3.6% of 10^4.
inline float log(float a) {
  a = ftz(a);
  if (std::isnan(a) || a < 0.0f) return std::numeric_limits<float>::quiet_NaN();
  if (a == 0.0f) return -std::numeric_limits<float>::infinity();
  if (std::isinf(a)) return a;
  std::uint32_t u;
  std::memcpy(&u, &a, 4);
  float e = 1.0f + static_cast<float>(static_cast<std::int32_t>(u >> 23) - 0x7f);
  u = (u & ~0x7f800000u) | 0x3f000000u;  // the mantissa, in [0.5, 1)
  float t;
  std::memcpy(&t, &u, 4);
  const bool small = t < 0.707106781186547524f;
  const float t1 = small ? t : 0.0f;
  t = t - 1.0f;
  e = e - (small ? 1.0f : 0.0f);
  t = t + t1;
  const float x2 = t * t, x3 = x2 * t;
  float y = std::fma(t, 7.0376836292e-2f, -1.1514610310e-1f);
  float y1 = std::fma(t, -1.2420140846e-1f, 1.4249322787e-1f);
  float y2 = std::fma(t, 2.0000714765e-1f, -2.4999993993e-1f);
  y = std::fma(y, t, 1.1676998740e-1f);
  y1 = std::fma(y1, t, -1.6668057665e-1f);
  y2 = std::fma(y2, t, 3.3333331174e-1f);
  y = std::fma(y, x3, y1);
  y = std::fma(y, x3, y2);
  y = std::fma(y, x3, -2.12194440e-4f * e);
  t = t - 0.5f * x2;
  t = t + y;
  t = t + 0.693359375f * e;
  return ftz(t);
}
// XLA's log1p (codegen/intrinsic/log1p): log(x + 1) for |x| >= sqrt(2) - 1, else Cephes'
// rational function, its polynomials by Horner's rule with fused multiply-adds. Equal to JAX
// 0.10.2's on the 10^6 inputs of exp.
inline float log1p(float a) {
  const float x = ftz(a);
  if (!(std::fabs(x) < 0.41421356237309504880f)) return log(ftz(x + 1.0f));
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
  const float x2 = ftz(x * x);
  float s = ftz(ftz(x * x2) * ftz(p / q));
  s = ftz(std::fma(-0.5f, x2, s));
  return ftz(x + s);
}
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
// XLA's expm1 (elemental emitter): x itself when x / 2 flushes to 0, exp(x) - 1 for |x| > 1/2,
// else tanh(x / 2) * (exp(x) + 1), with XLA's exp and tanh. Equal to JAX 0.10.2's on the 10^6
// inputs of exp; the C library's expm1f differed on 16%.
inline float expm1(float a) {
  const float x = ftz(a);
  const float h = ftz(x * 0.5f);
  if (h == 0.0f) return a;
  const float e = exp(x);
  return ftz(std::fabs(x) > 0.5f ? e - 1.0f : tanh(h) * (e + 1.0f));
}
// XLA expands logistic to 1 / (exp(-x) + 1), with its exp (equal to JAX 0.10.2's on 10^6 inputs).
inline float logistic(float a) { return ftz(1.0f / (exp(-ftz(a)) + 1.0f)); }
// XLA's erf for float32 (codegen/intrinsic/erf, Eigen's rational function): p(x) / q(x), both by
// fused multiply-adds in x^2, and +-1 from |x| >= 3.8325069. Equal to JAX 0.10.2's on 10^6 inputs.
inline float erf(float a) {
  const float x = ftz(a);
  if (std::fabs(x) >= 3.832506856900711f) return std::copysign(1.0f, x);
  const float x2 = ftz(x * x);
  float p = std::fma(x2, 0.00022905065861350646f, 0.0034082910107109506f);
  p = std::fma(x2, p, 0.050955695062380861f);
  p = std::fma(x2, p, 0.18520832239976145f);
  p = std::fma(x2, p, 1.128379143519084f);
  p = ftz(x * p);
  float q = std::fma(x2, -1.1791602954361697e-7f, 0.000023547966471313185f);
  q = std::fma(x2, q, 0.0010179625278914885f);
  q = std::fma(x2, q, 0.014070470171167667f);
  q = std::fma(x2, q, 0.11098505178285362f);
  q = std::fma(x2, q, 0.49746925110067538f);
  q = std::fma(x2, q, 1.0f);
  return ftz(p / q);
}
// JAX's erfc (its CHLO expansion, Cephes' erfcf): 1 - x p(x^2) for |x| < 1, else
// exp(-x^2) / |x| times a polynomial in 1 / x^2 (one for |x| < 2, one beyond), 0 once -x^2 <
// -88.72, and 2 minus that for x < 0; every multiply-add of its polynomials one FMA, as LLVM
// contracts them. Equal to JAX 0.10.2's on 10^6 inputs (the C library's erfcf differed on 22%).
inline float erfc(float a) {
  const float x = ftz(a);
  const float ax = std::fabs(x), x2 = ftz(x * x);
  if (ax < 1.0f) {
    float p = std::fma(x2, 7.85386146e-05f, -0.000801019371f);
    p = std::fma(p, x2, 0.00518832775f);
    p = std::fma(p, x2, -0.0268538129f);
    p = std::fma(p, x2, 0.112835854f);
    p = std::fma(p, x2, -0.37612626f);
    p = std::fma(p, x2, 1.12837911f);
    return ftz(std::fma(-x, p, 1.0f));
  }
  const float z = -x2;
  const float q = ftz(exp(z) * ftz(1.0f / ax));
  const float r = ftz(1.0f / x2);
  float p;
  if (ax < 2.0f) {
    p = std::fma(r, 0.0232682f, -0.138703942f);
    p = std::fma(p, r, 0.368742466f);
    p = std::fma(p, r, -0.582473278f);
    p = std::fma(p, r, 0.621000469f);
    p = std::fma(p, r, -0.494451523f);
    p = std::fma(p, r, 0.340488f);
    p = std::fma(p, r, -0.274112701f);
    p = std::fma(p, r, 0.563825965f);
  } else {
    p = std::fma(r, -10.477664f, 12.9772f);
    p = std::fma(p, r, -7.49551868f);
    p = std::fma(p, r, 2.92101908f);
    p = std::fma(p, r, -1.01526523f);
    p = std::fma(p, r, 0.42184633f);
    p = std::fma(p, r, -0.282076746f);
    p = std::fma(p, r, 0.564189494f);
  }
  const float y = z < -88.7228394f ? 0.0f : ftz(q * p);
  return ftz(x < 0.0f ? 2.0f - y : y);
}
// IEEE, correctly rounded, of the operand flushed as XLA:CPU's (sqrt(1e-40) is 0 in JAX).
inline float sqrt(float a) { return std::sqrt(ftz(a)); }
// 1 / sqrt: XLA:CPU uses the CPU's rsqrt estimate and Newton steps, whose bits depend on the CPU.
inline float rsqrt(float a) { return 1.0f / std::sqrt(ftz(a)); }
// The C library's cbrtf, which XLA:CPU calls, under its flush: a subnormal operand gives what
// cbrtf computes with DAZ set (JAX 0.10.2: -5.59517354e-16 for every one).
inline float cbrt(float a) {
  if (a == 0.0f || ftz(a) != 0.0f) return std::cbrt(a);
  const FlushDenormals flush;
  return std::cbrt(a);
}
// The C library's powf and atan2f, which XLA:CPU calls, as they compute under its flush when an
// operand or the result is subnormal (JAX 0.10.2's bits on 10^6 pairs each, random bit patterns
// among them; without the flush 0.4% and 0.6% of those differed).
inline bool subnormal(float a) { return a != 0.0f && ftz(a) == 0.0f; }
inline float pow(float a, float b) {
  const float r = std::pow(a, b);
  if (!subnormal(a) && !subnormal(b) && !subnormal(r)) return r;
  const FlushDenormals flush;
  return std::pow(a, b);
}
inline float atan2(float a, float b) {
  const float r = std::atan2(a, b);
  if (!subnormal(a) && !subnormal(b) && !subnormal(r)) return r;
  const FlushDenormals flush;
  return std::atan2(a, b);
}

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
