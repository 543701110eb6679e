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

// The shortest round-trip digits of `v` in scientific form, e.g. "1.11e+00"; splits it into the
// digits without the point ("111") and the decimal exponent (0).
template <typename T>
void shortest_digits(T v, std::string& digits, int& exponent) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  MESHRUN_CHECK(ec == std::errc(), "to_chars failed");
  const std::string s(buf, end);
  const auto e = s.find('e');
  for (std::size_t i = 0; i < e; ++i) {
    if (s[i] != '.' && s[i] != '-') digits += s[i];
  }
  exponent = std::atoi(s.c_str() + e + 1);
}

// Python repr's layout of digits d1 d2 ... dn times 10^exponent (value d1.d2...dn e exponent).
std::string layout(bool negative, const std::string& digits, int exponent) {
  std::string out = negative ? "-" : "";
  const auto n = static_cast<int>(digits.size());
  if (exponent < kMinFixedExponent || exponent >= kMaxFixedExponent) {
    out += digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    const std::string magnitude = std::to_string(std::abs(exponent));  // at least 2 digits
    return out + (exponent < 0 ? "e-" : "e+") + (magnitude.size() < 2 ? "0" : "") + magnitude;
  }
  if (exponent < 0) {
    return out + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  }
  const int int_digits = exponent + 1;
  if (n <= int_digits) {
    return out + digits + std::string(static_cast<std::size_t>(int_digits - n), '0') + ".0";
  }
  const auto split = static_cast<std::size_t>(int_digits);
  return out + digits.substr(0, split) + "." + digits.substr(split);
}

template <typename T>
std::string shortest(T v) {
  if (v == 0) return "0.0";  // also -0.0: a sign on zero only confuses a reader of results
  std::string digits;
  int exponent = 0;
  shortest_digits(std::fabs(v), digits, exponent);
  return layout(v < 0, digits, exponent);
}

// `v` rounded to `precision` decimals: its shortest round-trip decimal (the digits a person sees
// for the float32) rounded half away from zero, in decimal, so no binary rounding creeps in. The
// documented outputs follow this rule: 0.0722875f and 0.3039125f (shortest forms; their exact
// binary values lie just below the ties) print as 0.072288 and 0.303913.
std::string round_shortest(float v, int precision) {
  if (v == 0) return "0.0";
  std::string digits;
  int exponent = 0;
  shortest_digits(std::fabs(v), digits, exponent);
  const long keep = static_cast<long>(exponent) + 1 + precision;  // digits left of 10^-precision
  if (keep >= static_cast<long>(digits.size())) return layout(v < 0, digits, exponent);
  if (keep < 0) return "0.0";
  std::string kept = digits.substr(0, static_cast<std::size_t>(keep));
  if (digits[static_cast<std::size_t>(keep)] >= '5') {  // carry: 0.0999995 -> 0.1
    long i = keep - 1;
    for (; i >= 0 && kept[static_cast<std::size_t>(i)] == '9'; --i) kept[static_cast<std::size_t>(i)] = '0';
    if (i < 0) {
      kept.insert(0, "1");
      ++exponent;
    } else {
      ++kept[static_cast<std::size_t>(i)];
    }
  }
  while (!kept.empty() && kept.back() == '0') kept.pop_back();
  if (kept.empty()) return "0.0";  // a value that rounds to zero prints without a sign
  return layout(v < 0, kept, exponent);
}

}  // namespace

std::string format_number(float v, const NumberFormat& format) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  if (format.exact) return shortest(v);
  MESHRUN_CHECK(format.precision >= 0, "precision is validated by the caller");
  return round_shortest(v, format.precision);
}

}  // namespace meshrun
