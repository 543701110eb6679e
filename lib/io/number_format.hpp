// How meshrun prints a float32: the way the documented outputs are written (the float32's shortest
// decimal rounded to 6 places), so those outputs come out byte-identical.
#pragma once

#include <cstddef>
#include <string>

namespace meshrun {

struct NumberFormat {
  int precision = 6;   // decimals kept when rounding (ignored when exact)
  bool exact = false;  // print the float32's shortest round-trip form instead of rounding
};

// Default: the float32's shortest round-trip decimal, rounded to `precision` decimals half away
// from zero (0.0722875f -> 0.072288), printed shortest like Python's repr: "121.0", "0.2",
// "-0.057", "1e-06", "1e+16". At least one decimal in fixed notation; "-0.0" (also a tiny
// negative rounded to zero) prints as "0.0".
// exact: the shortest decimal that reads back as the same float32 ("0.1" for 0.1f), same style.
// Non-finite values have no JSON spelling: they print as "nan", "+inf", "-inf" for messages, and
// a result holding one is refused before it is written (find_non_finite, io/compare.hpp).
std::string format_number(float v, const NumberFormat& format);
// The same, appended to `out` without allocating (beyond `out`'s own growth).
void append_number(std::string& out, float v, const NumberFormat& format);
// The same, written at `out`, which has room for kMaxNumberChars; returns the end.
constexpr std::size_t kMaxNumberChars = 32;
char* put_number(char* out, float v, const NumberFormat& format);

}  // namespace meshrun
