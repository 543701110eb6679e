#include "io/number_format.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include "support/errors.hpp"

namespace meshrun {
namespace {

// Python's repr switches to exponent form for decimal exponents below -4 or from 16 up.
constexpr int kMinFixedExponent = -4;
constexpr int kMaxFixedExponent = 16;

// A positive finite float's shortest round-trip decimal digits d1 d2 ... dn (no point, no
// trailing zeros) and its decimal exponent: the value is d1.d2...dn x 10^exponent. Fixed-size
// storage: formatting a number allocates nothing (a result can hold millions of them).
struct Digits {
  char d[24];
  int n = 0;
  int exponent = 0;
};

Digits shortest_digits(float v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  MESHRUN_CHECK(ec == std::errc(), "to_chars failed");
  Digits out;
  const char* p = buf;
  for (; p != end && *p != 'e'; ++p) {
    if (*p != '.') out.d[out.n++] = *p;
  }
  MESHRUN_CHECK(p != end, "to_chars scientific has an exponent");
  // "e+05", "e-38": a sign and at least two digits.
  const bool negative = p[1] == '-';
  int exponent = 0;
  for (const char* e = p + 2; e != end; ++e) exponent = exponent * 10 + (*e - '0');
  out.exponent = negative ? -exponent : exponent;
  return out;
}

// The characters of one number are written to a buffer (kMaxNumberChars, number_format.hpp),
// never appended one by one: a result may hold millions of numbers. The longest is
// "-1.2345679e-38" (fixed notation has at most 16 integer digits and ".0", or "-0.000" and 9
// digits).

char* put(char* o, const char* s, std::size_t n) {
  std::memcpy(o, s, n);
  return o + n;
}

char* put_zeros(char* o, long count) {
  for (long i = 0; i < count; ++i) *o++ = '0';
  return o;
}

// Python repr's layout of digits d1 d2 ... dn times 10^exponent (value d1.d2...dn e exponent).
char* layout(char* o, bool negative, const char* digits, int n, int exponent) {
  if (negative) *o++ = '-';
  if (exponent < kMinFixedExponent || exponent >= kMaxFixedExponent) {
    *o++ = digits[0];
    if (n > 1) {
      *o++ = '.';
      o = put(o, digits + 1, static_cast<std::size_t>(n - 1));
    }
    const int magnitude = exponent < 0 ? -exponent : exponent;
    *o++ = 'e';
    *o++ = exponent < 0 ? '-' : '+';
    if (magnitude < 10) *o++ = '0';  // at least 2 digits
    return std::to_chars(o, o + 4, magnitude).ptr;
  }
  if (exponent < 0) {
    o = put(o, "0.", 2);
    o = put_zeros(o, -exponent - 1);
    return put(o, digits, static_cast<std::size_t>(n));
  }
  const int int_digits = exponent + 1;
  if (n <= int_digits) {
    o = put(o, digits, static_cast<std::size_t>(n));
    o = put_zeros(o, int_digits - n);
    return put(o, ".0", 2);
  }
  o = put(o, digits, static_cast<std::size_t>(int_digits));
  *o++ = '.';
  return put(o, digits + int_digits, static_cast<std::size_t>(n - int_digits));
}

// put_rounded's answer without finding the shortest decimal first, when it is certain to be the
// same; nullptr when it is not. a = |v| * 10^precision is exact in double (a float32's 24-bit
// significand times 5^precision <= 5^12 < 2^28, below 2^53). The shortest decimal S of v lies
// within half an ulp of v, so S * 10^precision lies within h = ulp(v)/2 * 10^precision of a;
// when no half-integer is that close to a, rounding S half away from zero gives round(a) (ties
// cannot occur), and its digits are those of the integer round(a) times 10^-precision.
char* put_rounded_fast(char* o, float v, int precision) {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2, 1e3,  1e4,  1e5, 1e6,
                                      1e7, 1e8, 1e9, 1e10, 1e11, 1e12};
  const float m = std::fabs(v);
  if (precision > 12 || !std::isnormal(m)) return nullptr;
  const double scale = kPow10[precision];
  const double a = static_cast<double>(m) * scale;
  if (a >= 0x1p52) return nullptr;
  // m in [2^(e2-1), 2^e2) (frexp's e2, from the biased exponent of a normal float): its ulp is
  // 2^(e2-24), and h, half an ulp scaled, is scale * 2^(e2-25). Built from bits rather than with
  // frexp/ldexp/floor, which are library calls in a baseline x86-64 build; a is below 2^52 and
  // not negative, so truncating it is its floor.
  const int e2 = static_cast<int>((std::bit_cast<std::uint32_t>(m) >> 23) & 0xff) - 126;
  const double h = scale * std::bit_cast<double>(static_cast<std::uint64_t>(e2 - 25 + 1023) << 52);
  const auto whole = static_cast<double>(static_cast<std::uint64_t>(a));
  const double off_tie = std::fabs(a - whole - 0.5);  // distance to the half-integer between
  if (!(off_tie > h)) return nullptr;
  const auto r = static_cast<std::uint64_t>(a - whole > 0.5 ? whole + 1 : whole);
  if (r == 0) return put(o, "0.0", 3);  // rounds to zero: no sign
  char digits[24];
  char* end = std::to_chars(digits, digits + sizeof digits, r).ptr;
  const int length = static_cast<int>(end - digits);
  while (end[-1] == '0') --end;  // r > 0: a nonzero digit stops it
  return layout(o, v < 0, digits, static_cast<int>(end - digits), length - 1 - precision);
}

// `v` rounded to `precision` decimals: its shortest round-trip decimal (the digits a person sees
// for the float32) rounded half away from zero, in decimal, so no binary rounding creeps in. The
// documented outputs follow this rule: 0.0722875f and 0.3039125f (shortest forms; their exact
// binary values lie just below the ties) print as 0.072288 and 0.303913.
char* put_rounded(char* o, float v, int precision) {
  if (char* done = put_rounded_fast(o, v, precision)) return done;
  Digits g = shortest_digits(std::fabs(v));
  const long keep = static_cast<long>(g.exponent) + 1 + precision;  // digits left of 10^-precision
  if (keep >= g.n) return layout(o, v < 0, g.d, g.n, g.exponent);
  if (keep < 0) return put(o, "0.0", 3);
  int kept = static_cast<int>(keep);
  const bool round_up = g.d[kept] >= '5';
  if (round_up) {  // carry: 0.0999995 -> 0.1
    int i = kept - 1;
    for (; i >= 0 && g.d[i] == '9'; --i) g.d[i] = '0';
    if (i < 0) {  // all nines: 1 followed by zeros, one decade up
      g.d[0] = '1';
      kept = 1;
      ++g.exponent;
    } else {
      ++g.d[i];
    }
  }
  while (kept > 0 && g.d[kept - 1] == '0') --kept;
  if (kept == 0) return put(o, "0.0", 3);  // a value that rounds to zero prints without a sign
  return layout(o, v < 0, g.d, kept, g.exponent);
}

}  // namespace

char* put_number(char* o, float v, const NumberFormat& format) {
  if (std::isnan(v)) {
    o = put(o, "nan", 3);
  } else if (std::isinf(v)) {
    o = put(o, v > 0 ? "+inf" : "-inf", 4);
  } else if (v == 0) {
    o = put(o, "0.0", 3);  // also -0.0: a sign on zero only confuses a reader of results
  } else if (format.exact) {
    const Digits g = shortest_digits(std::fabs(v));
    o = layout(o, v < 0, g.d, g.n, g.exponent);
  } else {
    MESHRUN_CHECK(format.precision >= 0, "precision is validated by the caller");
    o = put_rounded(o, v, format.precision);
  }
  return o;
}

void append_number(std::string& out, float v, const NumberFormat& format) {
  char buf[kMaxNumberChars];
  out.append(buf, static_cast<std::size_t>(put_number(buf, v, format) - buf));
}

std::string format_number(float v, const NumberFormat& format) {
  std::string out;
  append_number(out, v, format);
  return out;
}

}  // namespace meshrun
