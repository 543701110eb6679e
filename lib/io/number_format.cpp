#include "io/number_format.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
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
  const char* e = p + 1;
  if (*e == '+') ++e;  // from_chars takes a '-' but not a '+'
  std::from_chars(e, end, out.exponent);
  return out;
}

void append_zeros(std::string& out, long count) {
  if (count > 0) out.append(static_cast<std::size_t>(count), '0');
}

// Python repr's layout of digits d1 d2 ... dn times 10^exponent (value d1.d2...dn e exponent).
void layout(std::string& out, bool negative, const char* digits, int n, int exponent) {
  if (negative) out += '-';
  if (exponent < kMinFixedExponent || exponent >= kMaxFixedExponent) {
    out += digits[0];
    if (n > 1) {
      out += '.';
      out.append(digits + 1, static_cast<std::size_t>(n - 1));
    }
    const int magnitude = exponent < 0 ? -exponent : exponent;
    out += exponent < 0 ? "e-" : "e+";
    if (magnitude < 10) out += '0';  // at least 2 digits
    char buf[8];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, magnitude).ptr);
    return;
  }
  if (exponent < 0) {
    out += "0.";
    append_zeros(out, -exponent - 1);
    out.append(digits, static_cast<std::size_t>(n));
    return;
  }
  const int int_digits = exponent + 1;
  if (n <= int_digits) {
    out.append(digits, static_cast<std::size_t>(n));
    append_zeros(out, int_digits - n);
    out += ".0";
    return;
  }
  out.append(digits, static_cast<std::size_t>(int_digits));
  out += '.';
  out.append(digits + int_digits, static_cast<std::size_t>(n - int_digits));
}

// `v` rounded to `precision` decimals: its shortest round-trip decimal (the digits a person sees
// for the float32) rounded half away from zero, in decimal, so no binary rounding creeps in. The
// documented outputs follow this rule: 0.0722875f and 0.3039125f (shortest forms; their exact
// binary values lie just below the ties) print as 0.072288 and 0.303913.
void append_rounded(std::string& out, float v, int precision) {
  Digits g = shortest_digits(std::fabs(v));
  const long keep = static_cast<long>(g.exponent) + 1 + precision;  // digits left of 10^-precision
  if (keep >= g.n) {
    layout(out, v < 0, g.d, g.n, g.exponent);
    return;
  }
  if (keep < 0) {
    out += "0.0";
    return;
  }
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
  if (kept == 0) {
    out += "0.0";  // a value that rounds to zero prints without a sign
    return;
  }
  layout(out, v < 0, g.d, kept, g.exponent);
}

}  // namespace

void append_number(std::string& out, float v, const NumberFormat& format) {
  if (std::isnan(v)) {
    out += "nan";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+inf" : "-inf";
  } else if (v == 0) {
    out += "0.0";  // also -0.0: a sign on zero only confuses a reader of results
  } else if (format.exact) {
    const Digits g = shortest_digits(std::fabs(v));
    layout(out, v < 0, g.d, g.n, g.exponent);
  } else {
    MESHRUN_CHECK(format.precision >= 0, "precision is validated by the caller");
    append_rounded(out, v, format.precision);
  }
}

std::string format_number(float v, const NumberFormat& format) {
  std::string out;
  append_number(out, v, format);
  return out;
}

}  // namespace meshrun
